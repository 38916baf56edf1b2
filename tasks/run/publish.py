"""Publish: run.json with the gate, junit.xml, and Prefect artifacts. Files are atomic."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import CaseResult, RunManifest, SkillResult
from aeval.isolation.redact import Redactor, declared_values
from aeval.isolation.text import escape_controls, one_line
from aeval.run.layout import RunLayout
from aeval.run.read import RunRecord
from aeval.run.store import (
    atomic_write_bytes,
    atomic_write_text,
    redacted_model,
    write_model,
)
from aeval.tasks.run.prefect_artifacts import (
    artifact_key,
    emit_run_finished,
    inert_rows,
    publish_run_artifacts,
    report_base_url,
)
from aeval.tasks.run.prepare import PreparedRun
from aeval.tasks.run.progress import progress
from aeval.tasks.run.report import render_report
from aeval.tasks.run.reuse import record_verdicts
from aeval.verdicts.status import gate, skill_status, terminal_rate


def junit_xml(run_dir: Path, manifest: RunManifest) -> bytes:
    """A testsuite per skill x runtime, a testcase per case; failures carry the evidence."""
    run = RunRecord.of(run_dir, manifest)
    root = ET.Element("testsuites", name=f"aeval {manifest.run_id}")
    # the root's attributes are the common JUnit XSD's (no `skipped` there; suites have it)
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    for s in manifest.skills:
        by_rt: dict[str, list[CaseResult]] = {}
        for c in s.cases:
            by_rt.setdefault(c.runtime, []).append(c)
        if s.status == "invalid":
            suite = ET.SubElement(root, "testsuite", name=s.name, tests="1", failures="0",
                                  errors="1", time="0")
            totals["tests"] += 1
            totals["errors"] += 1
            tc = ET.SubElement(suite, "testcase", classname=s.name, name="contract")
            ET.SubElement(tc, "error", message="invalid skill").text = "\n".join(s.problems)
            continue
        for rt, cases in by_rt.items():
            suite = ET.SubElement(
                root, "testsuite", name=f"{s.name} [{rt}]", tests=str(len(cases)),
                failures=str(sum(c.status == "fail" for c in cases)),
                errors=str(sum(c.status in ("error", "internal") for c in cases)),
                skipped=str(sum(c.status == "untested" for c in cases)))
            suite_time = 0.0
            for c in cases:
                name = c.case_id if c.epoch is None else f"{c.case_id} epoch {c.epoch}"
                g = run.grading(c)
                seconds = (g.timing.total_s or 0.0) if g else 0.0
                suite_time += seconds
                tc = ET.SubElement(suite, "testcase", classname=f"{s.name}.{rt}", name=name,
                                   time=f"{seconds:.3f}")
                if c.status == "pass":
                    if c.ungraded:
                        ET.SubElement(tc, "system-out").text = f"{c.ungraded} ungraded: {c.reason}"
                    continue
                detail = c.reason
                if g is not None:
                    detail = "\n".join(
                        [c.reason] + [f"{e.id} {e.status.upper()}: {e.text}\n    {e.evidence}"
                                      for e in g.expectations if e.status != "passed"])
                if c.status == "untested":  # nothing runnable: skipped, never passed
                    ET.SubElement(tc, "skipped", message=f"untested: {c.reason}"[:300])
                    continue
                tag = "failure" if c.status == "fail" else "error"
                ET.SubElement(tc, tag, message=c.reason[:300]).text = detail
            suite.set("time", f"{suite_time:.3f}")
            totals["tests"] += len(cases)
            totals["failures"] += sum(c.status == "fail" for c in cases)
            totals["errors"] += sum(c.status in ("error", "internal") for c in cases)
            totals["time"] += suite_time
    for k, v in totals.items():
        root.set(k, f"{v:.3f}" if k == "time" else str(v))
    make_inert(root)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def make_inert(root: ET.Element) -> None:
    """Every text and attribute of the tree as XML 1.0 can hold it: a control character, an
    ESC sequence or a lone surrogate from a step's output or a file name is written as a
    visible escape (``\\x1b``), so junit.xml always parses (one bad character made GitLab's
    MR test widget drop the whole report)."""
    for el in root.iter():
        if el.text:
            el.text = escape_controls(el.text)
        if el.tail:
            el.tail = escape_controls(el.tail)
        for k, v in el.attrib.items():
            el.set(k, escape_controls(v))


def finish_run(run_dir: Path, manifest: RunManifest, require_tested: bool = False,
               unconcluded: list[str] | None = None,
               redactor: Redactor | None = None, min_tested: int = 0) -> RunManifest:
    """The finished manifest (with its gate), redacted with ``redactor`` (every credential
    the run declares); run.json, junit.xml and report.html written from it, redacted too."""
    redactor = redactor or Redactor()
    g = gate(manifest.skills, require_tested=require_tested, unconcluded=unconcluded,
             min_tested=min_tested)
    totals: dict[str, int] = {}
    for s in manifest.skills:
        for c in s.cases:
            totals[c.status] = totals.get(c.status, 0) + 1
        if s.status == "invalid":
            totals["invalid"] = totals.get("invalid", 0) + 1
    done = redacted_model(manifest.model_copy(update={
        "gate": g, "totals": totals, "status": "finished", "finished_at": datetime.now(UTC)}),
        redactor)
    layout = RunLayout(run_dir)
    write_model(layout.manifest, done, redactor)
    atomic_write_bytes(layout.junit, redactor.bytes(junit_xml(run_dir, done)))
    atomic_write_text(layout.report, render_report(run_dir, done), redactor)
    return done


def assemble(prepared: PreparedRun, results: list[CaseResult]) -> RunManifest:
    """run.json's skills: every examined skill with its case results (invalid ones with their
    problems), in a stable order."""
    by_skill: dict[str, list[CaseResult]] = {}
    for c in [*prepared.finished, *results]:
        by_skill.setdefault(c.dir.split("/", 1)[0], []).append(c)
    skills = []
    for ex in prepared.examined:
        cases = sorted(by_skill.get(ex.key or "", []),
                       key=lambda c: (c.runtime, c.case_id, c.epoch or 0))
        skills.append(SkillResult(
            name=ex.name, key=ex.key, path=str(ex.root), tier=ex.tier, warnings=ex.warnings,
            problems=ex.problems, cases=cases,
            status="invalid" if not ex.valid else skill_status(cases)))
    return prepared.manifest.model_copy(update={"skills": skills})


@task(name="publish", task_run_name="publish {prepared.manifest.run_id}", cache_policy=NO_CACHE)
def publish_run(prepared: PreparedRun, results: list[CaseResult],
                unconcluded: list[str] | None = None) -> RunManifest:
    """Write run.json (with the gate), junit.xml and report.html; attach Prefect artifacts
    (a table per skill, a link to the run). ``unconcluded``: the skills whose conclusion
    failed (``name [runtime]: why``), an internal error of the run."""
    run_dir = prepared.run_dir
    # every secret any case of the run declares: from here on (the files, the Prefect
    # artifacts and event, the console's summary) only the redacted manifest is used
    redactor = Redactor(declared_values(prepared.run_credentials))
    done = finish_run(run_dir, assemble(prepared, results), prepared.request.require_tested,
                      unconcluded, redactor, prepared.request.min_tested)
    if prepared.request.skip_unchanged:
        record_verdicts(Path(prepared.request.store), done.run_id, prepared.todo, results)
    progress("gate: exit %d (%s)", done.gate.exit_code, done.gate.reason)
    for s in done.skills:
        rows = [{"case": c.case_id, "runtime": c.runtime, "epoch": c.epoch, "status": c.status,
                 "first_attempt": c.first_attempt_pass_rate, "terminal": terminal_rate(c),
                 "ungraded": c.ungraded, "reason": c.reason} for c in s.cases]
        if s.status == "invalid":
            rows = [{"case": "-", "status": "invalid", "reason": "; ".join(s.problems)}]
        create_table_artifact(inert_rows(rows), key=artifact_key("skill", s.name),
                              description=one_line(f"{s.name}: {s.status}"))
    base_url = report_base_url(prepared.request.report_url)
    publish_run_artifacts(done, run_dir, base_url)
    emit_run_finished(done, base_url)
    return done
