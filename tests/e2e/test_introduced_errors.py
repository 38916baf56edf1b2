"""An environment error the change itself introduced does not pass the gate. A marketplace
repository whose `gpu-train` skill checks its device with its own script in `preflight`;
merge requests that break that check (by editing the preflight, by breaking the script it
runs, by adding a case whose preflight fails) are blocked by the GitLab template's own
`aeval-evaluate` script, run by bash with CI's variables. A preflight the change did not
touch and that fails on the base too stays an environment error (exit 3, retried and allowed
to fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.integration.test_changes import init_repo, sh

pytestmark = pytest.mark.e2e

TEMPLATE = ROOT / "deployments" / "gitlab" / "aeval.gitlab-ci.yml"
SKILL_MD = """---
name: gpu-train
description: Train the toy model on the data folder, on the device the check finds.
---

# gpu-train

Check the device first: `python3 scripts/check_device.py`, then run
`python3 scripts/train.py` from the workspace.
"""
CHECK_OK = "import sys\nprint('device: cpu (ok)')\nsys.exit(0)\n"
CHECK_BROKEN = "import sys\nsys.exit('device: none found')\n"
TRAIN = "print('trained: loss=0.1')\n"


def case(case_id: str, preflight: list[str]) -> dict:
    return {"id": case_id, "prompt": "Train the toy model with the gpu-train skill.",
            "expected_outcome": "It prints the loss.", "preflight": preflight,
            "steps": ["python3 $SKILL_DIR/scripts/train.py"],
            "assertions": [{"type": "transcript_regex", "pattern": "loss=\\d"}],
            "timeout_s": 60}


PREFLIGHT = ["python3 $SKILL_DIR/scripts/check_device.py"]


def marketplace(tmp_path: Path, cases: list[dict]) -> tuple[Path, str]:
    repo = init_repo(tmp_path / "repo")
    skill = repo / "skills" / "gpu-train"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "scripts" / "check_device.py").write_text(CHECK_OK)
    (skill / "scripts" / "train.py").write_text(TRAIN)
    (skill / "eval.config").write_text(json.dumps({"evals": cases}))
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", "gpu-train")
    return repo, sh(repo, "rev-parse", "HEAD")


def commit(repo: Path, message: str) -> None:
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", message)


def template_jobs() -> dict:
    """The template's jobs document (the one after its `spec:` header)."""
    _spec, jobs = yaml.safe_load_all(TEMPLATE.read_text())
    return jobs


def template_job() -> dict:
    return template_jobs()["aeval-evaluate"]


def run_ci_job(repo: Path, base: str, tmp_path: Path) -> tuple[int, str]:
    """The template's aeval-evaluate script, as GitLab runs it: bash, in the checkout, with
    CI's variables and the template's own."""
    doc = template_jobs()
    job = doc["aeval-evaluate"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update({k: str(v) for k, v in doc["variables"].items()})
    env.update(CI_MERGE_REQUEST_DIFF_BASE_SHA=base, CI_PROJECT_DIR=str(repo),
               AEVAL_SANDBOX="auto", AEVAL_CACHE_DIR=str(tmp_path / "cache"),
               PREFECT_HOME=str(tmp_path / "prefect-home"), AEVAL_RETRY_DELAY_S="0.05",
               PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    script = "set -eo pipefail\n" + "\n".join(job["script"]) + "\n"
    r = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def assert_blocked(code: int, out: str) -> None:
    job = template_job()
    assert code == 1, out
    assert code not in job["allow_failure"]["exit_codes"]
    assert code not in job["retry"]["exit_codes"]
    assert "introduced by this change" in out, out


def test_a_preflight_the_change_edits_and_that_fails_blocks_the_merge(tmp_path):
    repo, base = marketplace(tmp_path, [case("train", PREFLIGHT)])
    config = repo / "skills" / "gpu-train" / "eval.config"
    config.write_text(json.dumps({"evals": [case("train", [*PREFLIGHT, "nvidia-smi -L"])]}))
    commit(repo, "require a GPU")
    code, out = run_ci_job(repo, base, tmp_path)
    assert_blocked(code, out)
    assert "edits the case's preflight" in out


def test_a_script_the_change_breaks_under_an_unchanged_preflight_blocks_the_merge(tmp_path):
    repo, base = marketplace(tmp_path, [case("train", PREFLIGHT)])
    (repo / "skills" / "gpu-train" / "scripts" / "check_device.py").write_text(CHECK_BROKEN)
    commit(repo, "stricter device check")
    code, out = run_ci_job(repo, base, tmp_path)
    assert_blocked(code, out)
    assert "passes at the base and fails with this change" in out
    (run_dir,) = (repo / ".aeval" / "runs").iterdir()
    log = run_dir / "gpu-train" / "literal" / "train" / "base-preflight.log"
    assert "check_device.py" in log.read_text()  # what the base's preflight did, kept


def test_a_new_case_whose_preflight_fails_blocks_the_merge(tmp_path):
    repo, base = marketplace(tmp_path, [case("train", PREFLIGHT)])
    (repo / "skills" / "gpu-train" / "eval.config").write_text(json.dumps({"evals": [
        case("train", PREFLIGHT), case("multi-gpu", ["test -e /dev/nvidia1"])]}))
    commit(repo, "a multi-GPU case")
    code, out = run_ci_job(repo, base, tmp_path)
    assert_blocked(code, out)
    assert "a case this change adds" in out


def test_an_untouched_preflight_that_fails_on_the_base_too_stays_an_environment_error(
        tmp_path):
    repo, base = marketplace(tmp_path, [case("train", ["test -e /dev/nvidia0"])])
    (repo / "skills" / "gpu-train" / "scripts" / "train.py").write_text(
        TRAIN.replace("0.1", "0.05"))
    commit(repo, "better loss")
    code, out = run_ci_job(repo, base, tmp_path)
    job = template_job()
    assert code == 3 and code in job["allow_failure"]["exit_codes"], out
    assert "introduced by this change" not in out
