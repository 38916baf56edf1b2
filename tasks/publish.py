"""Publish: run.json with the gate, junit.xml, and Prefect artifacts. Files are atomic."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from aeval.tasks.report import render_report
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import CaseResult, Grading, RunManifest
from aeval.plan import safe
from aeval.store import atomic_write_bytes, atomic_write_text, read_model, write_model
from aeval.verdict import gate


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys: lowercase letters, digits and dashes."""
    return "-".join(safe(p).lower().replace("_", "-").replace(".", "-") for p in parts)[:200]


def junit_xml(run_dir: Path, manifest: RunManifest) -> bytes:
    """A testsuite per skill x runtime, a testcase per case; failures carry the evidence."""
    root = ET.Element("testsuites", name=f"aeval {manifest.run_id}")
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
                errors=str(sum(c.status == "error" for c in cases)))
            suite_time = 0.0
            for c in cases:
                name = c.case_id if c.epoch is None else f"{c.case_id} epoch {c.epoch}"
                grading_path = run_dir / c.dir / "grading.json"
                g = read_model(grading_path, Grading) if grading_path.is_file() else None
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
                tag = "failure" if c.status == "fail" else "error"
                ET.SubElement(tc, tag, message=c.reason[:300]).text = detail
            suite.set("time", f"{suite_time:.3f}")
            totals["tests"] += len(cases)
            totals["failures"] += sum(c.status == "fail" for c in cases)
            totals["errors"] += sum(c.status == "error" for c in cases)
            totals["time"] += suite_time
    for k, v in totals.items():
        root.set(k, f"{v:.3f}" if k == "time" else str(v))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def finish_run(run_dir: Path, manifest: RunManifest) -> RunManifest:
    g = gate(manifest.skills)
    totals: dict[str, int] = {}
    for s in manifest.skills:
        for c in s.cases:
            totals[c.status] = totals.get(c.status, 0) + 1
        if s.status == "invalid":
            totals["invalid"] = totals.get("invalid", 0) + 1
    done = manifest.model_copy(update={"gate": g, "totals": totals, "status": "finished",
                                       "finished_at": datetime.now(UTC)})
    write_model(run_dir / "run.json", done)
    atomic_write_bytes(run_dir / "junit.xml", junit_xml(run_dir, done))
    atomic_write_text(run_dir / "report.html", render_report(run_dir, done))
    return done


def case_markdown(c: CaseResult, skill: str, run_dir: Path) -> str:
    lines = [f"### {skill} / {c.case_id} [{c.runtime}]: **{c.status.upper()}**", "",
             c.reason, ""]
    p = run_dir / c.dir / "grading.json"
    if p.is_file():
        g = read_model(p, Grading)
        lines += ["| id | verdict | assertion | evidence |", "|---|---|---|---|"]
        for e in g.expectations:
            ev = e.evidence.replace("|", "\\|").replace("\n", " ")[:200]
            lines.append(f"| {e.id} | {e.status} | {e.text.replace('|', '/')} | {ev} |")
    return "\n".join(lines)


@task(name="publish", task_run_name="publish {manifest.run_id}", cache_policy=NO_CACHE)
def publish_run(run_dir: Path, manifest: RunManifest) -> RunManifest:
    """Write run.json and junit.xml; attach Prefect artifacts (table per skill, link)."""
    done = finish_run(run_dir, manifest)
    for s in done.skills:
        rows = [{"case": c.case_id, "runtime": c.runtime, "epoch": c.epoch, "status": c.status,
                 "first_attempt": c.first_attempt_pass_rate, "terminal": c.terminal_pass_rate,
                 "ungraded": c.ungraded, "reason": c.reason} for c in s.cases]
        if s.status == "invalid":
            rows = [{"case": "-", "status": "invalid", "reason": "; ".join(s.problems)}]
        create_table_artifact(rows, key=artifact_key("skill", s.name),
                              description=f"{s.name}: {s.status}")
    create_markdown_artifact(
        f"# aeval run {done.run_id}\n\nGate: exit {done.gate.exit_code} ({done.gate.reason})\n\n"
        f"Run folder: [{run_dir}](file://{Path(run_dir).resolve()})  \n"
        f"Report: [report.html](file://{Path(run_dir).resolve() / 'report.html'})  \n"
        f"JUnit: `{Path(run_dir).resolve() / 'junit.xml'}`\n",
        key=artifact_key("run", "summary"), description=f"aeval run {done.run_id}")
    return done
