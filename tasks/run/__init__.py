"""One run: `prepare` (find and examine the skills, plan every case), `examine`, `cases`,
`checkout` (a run's own checkout), `reuse` (skip what did not change), and its outputs:
`publish` (run.json, junit.xml, Prefect artifacts), `report` (report.html, from
``tasks/templates/``), `ci_reports`, `prefect_artifacts` and `progress`."""
