"""What aeval shows in the Prefect UI and tells Prefect's event bus: artifact keys, the
per-case markdown table, the run-summary link, and the events an Automation can act on:

    aeval.case.<status>   one per case chain (pass, fail, error, internal, untested), resource
                          aeval.case.<run-id>.<skill-key>/<case>..., payload: reason, rates
    aeval.run.finished    one per evaluate run, resource aeval.run.<run-id> (labels
                          aeval.exit-code, aeval.nothing-tested), payload: the gate
                          (exit_code, reason, tested, untested, nothing_tested, min_tested),
                          totals, and the report URL when there is one

Untrusted text (skill names, reasons, assertion texts, evidence, file names) is inert there:
in markdown artifacts it is shown as code spans (no link, image, HTML or emphasis of a
skill's or a model's renders), in table artifacts every string has its control characters
escaped (`inert_rows`), in state messages and event payloads too (`inert`)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from aeval.artifacts import CaseResult, RunManifest, TriggersReport
from aeval.isolation.text import code_span, escape_controls
from aeval.run.layout import RunLayout, safe
from aeval.run.read import read_grading
from aeval.verdicts.coverage import SkillCoverage
from aeval.verdicts.efficiency import EFFICIENCY_COLUMNS, efficiency_cells


def inert_rows(rows: list[dict]) -> list[dict]:
    """Table artifact rows with every string value's control characters escaped."""
    return [{k: escape_controls(v) if isinstance(v, str) else v for k, v in r.items()}
            for r in rows]


def _md_cell(text: str) -> str:
    """Untrusted text in a markdown table cell: a code span, ``|`` escaped."""
    return code_span(text).replace("|", "\\|")


_KEY_PART = re.compile(r"[a-z0-9]+")
KEY_LIMIT = 200


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes) for ``parts``, one key
    per distinct ``parts`` (case ids ``c`` and ``c.`` of one skill never share a key, nor do
    skill ``a-b`` with case ``c`` and skill ``a`` with case ``b-c``).

    The readable join of the parts when it says them exactly: every part lowercase letters
    and digits only (``run``, ``summary``), so the join splits one way only. Otherwise that
    join, lowercased and cut, then ``-`` and 12 hex of the sha256 of the exact parts (as
    `aeval.run.layout.component` does for folders): ``csv-stats`` shows as itself, with the
    hash after it."""
    plain = "-".join(parts)
    if all(_KEY_PART.fullmatch(p) for p in parts) and len(plain) <= KEY_LIMIT:
        return plain
    readable = "-".join(safe(p).lower().replace("_", "-").replace(".", "-") for p in parts)
    readable = re.sub(r"[^a-z0-9-]+", "-", readable)[:KEY_LIMIT - 13].strip("-") or "key"
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{readable}-{digest[:12]}"


def case_markdown(c: CaseResult, skill: str, run_dir: Path) -> str:
    epoch = f" #{c.epoch}" if c.epoch is not None else ""
    lines = [f"### {code_span(skill)} / {c.case_id}{epoch} [{c.runtime}]: "
             f"**{c.status.upper()}**",
             "", code_span(c.reason), ""]
    if (g := read_grading(RunLayout(run_dir).case(c.dir))) is not None:
        lines += ["| id | verdict | assertion | evidence |", "|---|---|---|---|"]
        for e in g.expectations:
            lines.append(f"| {_md_cell(e.id)} | {e.status} | {_md_cell(e.text)} | "
                         f"{_md_cell(e.evidence[:200])} |")
    if c.efficiency is not None or c.stray_files is not None:
        cells = efficiency_cells(c.efficiency, c.stray_files)
        lines += ["", "| " + " | ".join(EFFICIENCY_COLUMNS) + " |",
                  "|" + "---|" * len(EFFICIENCY_COLUMNS),
                  "| " + " | ".join(_md_cell(x) for x in cells) + " |"]
    return "\n".join(lines)


def trigger_rows(report: TriggersReport) -> list[dict]:
    """The Prefect table of a triggers run: one row per skill x runtime."""
    return inert_rows([{"skill": s.skill, "runtime": s.runtime, "precision": s.precision,
             "recall": s.recall, "tp": s.tp, "fn": s.fn, "fp": s.fp, "tn": s.tn,
             "errors": s.errors, "prompts": s.source,
             "picked instead": ", ".join(f"{k} ({v})" for k, v in s.distractor_picks.items()),
             "distractors": len(s.distractors)} for s in report.scores])


def coverage_rows(cov: SkillCoverage) -> list[dict]:
    """The Prefect table of a skill's resource coverage (one runtime): one row per file of
    the skill, the runs that read, executed or wrote it, untouched files flagged."""
    return inert_rows([{"file": f, "read": cov.read.get(f, 0),
                        "executed": cov.executed.get(f, 0), "written": cov.written.get(f, 0),
                        "untouched": "UNTOUCHED" if f in cov.untouched else ""}
                       for f in cov.files])


def inert(text: str) -> str:
    """Untrusted text (a reason quoting a tool's output) with control and invisible characters
    escaped and newlines as spaces: what a Prefect state message or event payload may show."""
    return escape_controls(text.replace("\n", " "), keep="")


def emit_case_event(run_id: str, skill: str, skill_key: str, label: str,
                    result: CaseResult) -> None:
    """``aeval.case.<status>`` for one case chain (related to its task and flow run by
    Prefect itself, from the run context)."""
    from prefect.events import emit_event

    emit_event(
        event=f"aeval.case.{result.status}",
        resource={"prefect.resource.id": f"aeval.case.{run_id}.{result.dir}",
                  "prefect.resource.name": inert(label)[:200], "aeval.run-id": run_id,
                  "aeval.skill": inert(skill), "aeval.skill-key": inert(skill_key),
                  "aeval.case": inert(result.case_id), "aeval.runtime": result.runtime},
        payload={"status": result.status, "reason": inert(result.reason)[:1000],
                 "first_attempt_pass_rate": result.first_attempt_pass_rate,
                 "terminal_pass_rate": result.terminal_pass_rate, "epoch": result.epoch})


def report_base_url(configured: str | None) -> str | None:
    """Where run folders are browsable: ``configured`` (a request's ``report_url``), else
    AEVAL_REPORT_URL, else, in a GitLab CI job, that job's browsable artifacts
    (``$CI_JOB_URL/artifacts/file/<store>/runs``, as the template keeps the run folders)."""
    if configured or os.environ.get("AEVAL_REPORT_URL"):
        return (configured or os.environ["AEVAL_REPORT_URL"]).rstrip("/")
    job = os.environ.get("CI_JOB_URL")
    if job:
        store = os.environ.get("AEVAL_HOME", ".aeval").strip("/") or ".aeval"
        return f"{job.rstrip('/')}/artifacts/file/{store}/runs"
    return None


def run_summary_markdown(manifest: RunManifest, run_dir: Path, base_url: str | None) -> str:
    """The run-summary artifact: the gate, and links to report.html and junit.xml where
    they are browsable (``base_url``), else their paths on the machine that ran it (a
    file:// link is dead in the UI of any other machine)."""
    gate = manifest.gate
    lines = [f"# aeval run {manifest.run_id}", "",
             f"Gate: exit {gate.exit_code} {code_span(gate.reason)}" if gate else "Gate: none",
             ""]
    if base_url:
        url = f"{base_url}/{manifest.run_id}"
        lines += [f"Report: [report.html]({url}/report.html)  ",
                  f"JUnit: [junit.xml]({url}/junit.xml)  ", f"Run folder: <{url}/>"]
    else:
        where = RunLayout(Path(run_dir).resolve())
        lines += [f"Run folder (on the machine that ran it): `{where.run_dir}`  ",
                  f"Report: `{where.report}`  ", f"JUnit: `{where.junit}`"]
    return "\n".join(lines) + "\n"


def publish_run_artifacts(manifest: RunManifest, run_dir: Path, base_url: str | None) -> None:
    """The run-summary markdown and, where the report is browsable, a link artifact to it."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    create_markdown_artifact(run_summary_markdown(manifest, run_dir, base_url),
                             key=artifact_key("run", "summary"),
                             description=f"aeval run {manifest.run_id}")
    if base_url:
        create_link_artifact(f"{base_url}/{manifest.run_id}/report.html",
                             link_text=f"report.html of run {manifest.run_id}",
                             key=artifact_key("run", "report"),
                             description=f"aeval run {manifest.run_id}: report.html")


def emit_run_finished(manifest: RunManifest, base_url: str | None) -> None:
    """``aeval.run.finished`` with the gate: what an Automation keys on to tell someone that
    a nightly (or any run) did not pass, or passed having tested nothing (the resource's
    ``aeval.nothing-tested`` label, the payload's ``gate.nothing_tested``)."""
    from prefect.events import emit_event

    gate = manifest.gate
    emit_event(
        event="aeval.run.finished",
        resource={"prefect.resource.id": f"aeval.run.{manifest.run_id}",
                  "prefect.resource.name": f"aeval run {manifest.run_id}",
                  "aeval.exit-code": str(gate.exit_code if gate else 0),
                  "aeval.nothing-tested": str(bool(gate and gate.nothing_tested)).lower()},
        payload={"run_id": manifest.run_id,
                 "gate": ({**gate.model_dump(), "reason": inert(gate.reason)[:1000]} if gate
                          else {"exit_code": 0, "reason": ""}),
                 "totals": manifest.totals, "skills": [s.name for s in manifest.skills],
                 "report_url": f"{base_url}/{manifest.run_id}/report.html" if base_url
                 else None})
