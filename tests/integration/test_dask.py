"""`aeval run --dask local`: the evaluate flow on a local Dask cluster (worker processes, so
every plan, record and exception crosses a process boundary) gives the verdicts of the default
thread pool, an environment error included."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("prefect_dask",
                    reason="prefect-dask not installed: pip install 'aeval-skills[dask]'")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "marketplace"
AEVAL = str(Path(sys.executable).parent / "aeval")
MISSING = "DASKTEST_NOT_SET_TOKEN"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXPECTED = {
    ("csv-stats", "stats"): "pass",
    ("csv-stats", "summary"): "pass",
    ("hello-docs", "smoke"): "pass",
    ("release-notes", "notes"): "pass",
    ("segmentation", "inference"): "fail",
    ("segmentation", "train"): "fail",
    ("invoice-totals", "totals"): "fail",
    ("needs-secret", "uses-token"): "error",  # execute raises MissingCredential
    # SKILL.md's own doc tests beside the contracts (literal)
    ("csv-stats", "skill-md"): "untested",
    ("invoice-totals", "skill-md"): "fail",
    ("release-notes", "skill-md"): "untested",
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example marketplace plus a skill whose case needs a credential that is not set, and
    a PREFECT_HOME shared by the runs of this module (migrated once)."""
    root = tmp_path_factory.mktemp("dask")
    market = root / "marketplace"
    shutil.copytree(EXAMPLES, market)
    skill = market / "skills" / "needs-secret"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: needs-secret\ndescription: Calls a service "
                                    "with a token.\n---\nRun `echo ok`.\n")
    (skill / "eval.config").write_text(json.dumps({"evals": [{
        "id": "uses-token", "prompt": "Call the service.", "expected_outcome": "ok printed",
        "required_credentials": [MISSING], "steps": ["echo ok"],
        "assertions": [{"type": "transcript_contains", "text": "ok"}]}]}))
    return root


def run(workdir: Path, name: str, *extra: str) -> tuple[int, dict, str]:
    """``aeval run`` on the marketplace copy; the exit code, run.json and the output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.pop(MISSING, None)
    env.update(PREFECT_HOME=str(workdir / "prefect-home"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    out = workdir / name
    proc = subprocess.run([AEVAL, "run", str(workdir / "marketplace"), "--out", str(out),
                           "--no-grader", "--concurrency", "2", *extra], env=env,
                          capture_output=True, text=True, timeout=240)
    output = proc.stdout[-4000:] + proc.stderr[-4000:]
    manifests = list((out / "runs").glob("*/run.json"))
    assert len(manifests) == 1, output
    return proc.returncode, json.loads(manifests[0].read_text()), output


def verdicts(manifest: dict) -> dict[tuple[str, str], str]:
    return {(s["name"], c["case_id"]): c["status"] for s in manifest["skills"]
            for c in s["cases"]}


@pytest.fixture(scope="module")
def default_run(workdir: Path) -> tuple[int, dict, str]:
    return run(workdir, "threads")


def test_default_runner_verdicts(default_run):
    code, manifest, output = default_run
    assert verdicts(manifest) == EXPECTED, output
    assert code == 1, output


def test_dask_local_gives_the_default_verdicts(workdir: Path, default_run):
    code, manifest, output = run(workdir, "dask", "--dask", "local")
    assert verdicts(manifest) == verdicts(default_run[1]) == EXPECTED, output
    assert code == default_run[0] == 1, output
    error = next(c for s in manifest["skills"] for c in s["cases"] if c["status"] == "error")
    assert "MissingCredential" in error["reason"] and MISSING in error["reason"]


def test_dask_argument_errors_are_usage_errors(workdir: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env["PREFECT_HOME"] = str(workdir / "prefect-home")
    for arg, message in (("localhost:8786", "tcp://"),
                         ("tcp://127.0.0.1:9", "PREFECT_API_URL")):
        proc = subprocess.run([AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"),
                               "--out", str(workdir / "unused"), "--dask", arg], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert message in proc.stderr


def test_model_calls_stay_bounded_across_dask_worker_processes(tmp_path: Path):
    """AEVAL_MODEL_CONCURRENCY bounds the model calls of the whole run, not of each worker
    process: with --dask the bound is a Prefect global concurrency limit."""
    from aeval.testing import ScriptedModelServer, Turn

    market = tmp_path / "marketplace"
    for name in ("ledger-a", "ledger-b", "ledger-c", "ledger-d"):
        d = market / name
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Totals the {name} "
                                    "ledger.\n---\nAnswer with the total.\n")
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "total", "prompt": f"What does {name} total?",
            "expected_outcome": "the total", "assertions": [
                {"type": "transcript_contains", "text": "total is"}]}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), OPENAI_API_KEY="sk-scripted",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", AEVAL_MODEL_CONCURRENCY="1")
    delay = 1.5
    with ScriptedModelServer([], default=Turn(text="The total is 12.", delay_s=delay)) as srv:
        proc = subprocess.run([AEVAL, "run", str(market), "--out", str(tmp_path / "out"),
                               "--runtime", "builtin", "--model", "openai/scripted",
                               "--api-base", srv.base_url_openai, "--no-grader",
                               "--dask", "local", "--concurrency", "4"], env=env,
                              capture_output=True, text=True, timeout=240)
        starts = sorted(r.t for r in srv.requests if r.wire == "chat")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(starts) == 4
    # one call in flight at a time: each request arrives after the previous one was answered
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= delay - 0.1, gaps
