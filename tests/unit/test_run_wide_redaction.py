"""Redaction is run-wide, the credentials are not: planning gives every case the names of
every credential the run declares; a case's redactor covers all of them, while its executor
still gets only its own case's."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from aeval.artifacts import CaseResult
from aeval.isolation.redact import Redactor, declared_values
from aeval.run.plan import RunSettings
from aeval.run.store import redacted_model
from aeval.tasks.case.install import case_redactor, resolve_credentials
from aeval.tasks.run.cases import plan_cases
from aeval.tasks.run.examine import examine

TOKEN = "dpl_live_7Kq2Vx9Lm4Rt8Wz3"


def skill(root: Path, name: str, credentials: list[str]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\n"
                                f"# {name}\n")
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "main", "prompt": "Do it.", "expected_outcome": "Done.",
        "required_credentials": credentials, "steps": ["true"]}]}))
    return d


def plans(tmp_path: Path):
    examined = [examine(skill(tmp_path, "deploy-notes", ["DEPLOY_TOKEN"])),
                examine(skill(tmp_path, "release-digest", []))]
    examined = [ex.model_copy(update={"key": ex.name}) for ex in examined]
    run = RunSettings(run_id="r1", run_dir=tmp_path / "run", workspace_root=tmp_path / "ws")
    out = plan_cases(examined, run, ["literal"], 1)
    return {p.skill.name: p for p in out}


def test_every_case_is_planned_with_the_names_of_the_runs_credentials(tmp_path):
    by_name = plans(tmp_path)
    assert by_name["release-digest"].case.required_credentials == []
    assert {n: p.run.run_credentials for n, p in by_name.items()} == {
        "deploy-notes": ["DEPLOY_TOKEN"], "release-digest": ["DEPLOY_TOKEN"]}
    # names only: no value travels in a plan (a task parameter, kept in Prefect's database)
    assert TOKEN not in by_name["release-digest"].model_dump_json()


def test_a_case_redacts_what_another_declares_but_its_executor_never_gets_it(
        tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)
    digest = plans(tmp_path)["release-digest"]
    assert resolve_credentials(digest) == {}  # the executor's credentials: its own, none
    red = case_redactor(digest)
    printed = f"{TOKEN}\n{base64.b64encode(TOKEN.encode()).decode()}\n{TOKEN.encode().hex()}"
    assert red.text(printed) == "\n".join(["[REDACTED:DEPLOY_TOKEN]"] * 3)


def test_a_credential_not_set_is_not_redacted_and_does_not_fail(tmp_path, monkeypatch):
    monkeypatch.delenv("DEPLOY_TOKEN", raising=False)
    assert not case_redactor(plans(tmp_path)["release-digest"])
    assert declared_values(["DEPLOY_TOKEN", "EMPTY"], {"EMPTY": ""}) == {}


def test_a_model_is_redacted_through_its_json_form():
    result = CaseResult(case_id="main", runtime="literal", status="fail", dir="a/literal/main",
                        reason=f'check failed: "token={TOKEN}"')
    red = redacted_model(result, Redactor({"DEPLOY_TOKEN": TOKEN}))
    assert red.reason == 'check failed: "token=[REDACTED:DEPLOY_TOKEN]"'
    assert redacted_model(result, Redactor()) is result
