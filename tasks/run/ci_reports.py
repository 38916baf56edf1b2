"""The CI reports of a run served elsewhere: junit.xml (GitLab's test widget) and
gl-code-quality.json (its Code Quality widget) as one Prefect markdown artifact, ``ci-reports``,
so that `aeval trigger` in a CI job can write them where the job's `artifacts:reports` look,
although the run folder lives on the serving machine."""

from __future__ import annotations

import re
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from aeval.run.layout import JUNIT
from aeval.tasks.deliver.bodies import write_code_quality_report
from aeval.tasks.deliver.read_run import CODE_QUALITY_FILE, load_run
from aeval.tasks.run.prefect_artifacts import artifact_key

CI_REPORTS_KEY = artifact_key("ci", "reports")  # "ci-reports": both sides use this one key
REPORT_FILES = (JUNIT, CODE_QUALITY_FILE)
_SECTION = re.compile(r"^## (?P<name>\S+)\n(?P<fence>`{3,})\w*\n(?P<body>.*?)\n(?P=fence)$",
                      re.M | re.S)
_RUN_ID = re.compile(r"^# CI reports of aeval run (?P<run_id>\S+)$", re.M)


def fenced(name: str, text: str, lang: str) -> str:
    """``## name`` and ``text`` in a fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"## {name}\n{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}\n"


def ci_reports_markdown(run_id: str, files: dict[str, str]) -> str:
    """The artifact's text: a header naming the run, then one fenced section per file."""
    parts = [f"# CI reports of aeval run {run_id}\n",
             "Written into the CI job by `aeval trigger` (GitLab's test and Code Quality "
             "widgets).\n"]
    parts += [fenced(name, text, "xml" if name.endswith(".xml") else "json")
              for name, text in files.items()]
    return "\n".join(parts)


def parse_ci_reports(markdown: str) -> tuple[str | None, dict[str, str]]:
    """The run id and ``{file name: text}`` of a ``ci-reports`` artifact."""
    m = _RUN_ID.search(markdown)
    return (m["run_id"] if m else None,
            {s["name"]: s["body"] + "\n" for s in _SECTION.finditer(markdown)
             if s["name"] in REPORT_FILES})


@task(name="ci-reports", task_run_name="ci-reports {run_id}", cache_policy=NO_CACHE)
def publish_ci_reports(run_dir: Path, run_id: str, repo_root: Path | None = None) -> None:
    """Write gl-code-quality.json into the run folder (skill paths mapped into
    ``repo_root``), then attach junit.xml and it as the ``ci-reports`` artifact."""
    run_dir = Path(run_dir)
    write_code_quality_report(load_run(run_dir, repo_root))
    files = {n: (run_dir / n).read_text(encoding="utf-8") for n in REPORT_FILES
             if (run_dir / n).is_file()}
    create_markdown_artifact(ci_reports_markdown(run_id, files),
                             key=CI_REPORTS_KEY,
                             description=f"junit.xml and {CODE_QUALITY_FILE} of aeval run "
                                         f"{run_id}, for the CI job")
