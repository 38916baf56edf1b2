"""Issue 29: a busy Prefect server costs a case, never the run. `aeval run --runtime literal`
against aeval's own server app (a real uvicorn + Prefect + SQLite on loopback) behind a
loopback proxy (tests/api_proxy.py) that counts the API requests and refuses some with 503
or resets their connection before the server sees them.

- Starting a case chain asks the server for nothing: no concurrency-slot request per case
  (before: ``POST /v2/concurrency_limits/increment-with-lease``, the request a busy server
  refused with 503 and the run ended exit 4).
- Every request for one case's artifact refused: that case ends `error` with the reason,
  the others keep their verdicts, exit 3 (was 4); ``--resume`` runs it again.
- The flow run's own state refused: exit 3 with one line, not an internal error.
- 204 cases through a proxy refusing 8 % of the requests and resetting 2 %: the verdicts and
  the exit code of a run without faults.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeval.tasks.run.prefect_artifacts import artifact_key
from tests.api_proxy import ApiProxy, Faults, Request, prefect_server, write_marketplace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

AEVAL = str(Path(sys.executable).parent / "aeval")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, dict[str, str]]]:
    with prefect_server(tmp_path_factory.mktemp("busy-server") / "home") as got:
        yield got


def aeval(proxy: ApiProxy, env: dict[str, str], *args: str,
          timeout: float = 420) -> subprocess.CompletedProcess:
    """`aeval ARGS` reporting to the server through ``proxy`` (bounded)."""
    return subprocess.run([AEVAL, *args], env={**env, "PREFECT_API_URL": proxy.api_url},
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def server_api(port: int, method: str, path: str, body: dict | None = None) -> None:
    """One request of the test's own to the server (not through the proxy), with Prefect's
    client and so its retries: a 503 of a server still writing the last run's events is
    retried, as it is for aeval (a plain urlopen failed the cleanup in CI once)."""
    from prefect.client.base import PrefectHttpxSyncClient

    with PrefectHttpxSyncClient(base_url=f"http://127.0.0.1:{port}/api/", timeout=60,
                                enable_csrf_support=False) as client:
        client.request(method, path, json=body).raise_for_status()


def verdicts(store: Path) -> dict[str, tuple[str, str]]:
    """``skill/case`` -> (status, reason) from the only run's run.json."""
    (run_dir,) = (store / "runs").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    return {f"{s['name']}/{c['case_id']}": (c["status"], c["reason"])
            for s in manifest["skills"] for c in s["cases"]}


def add_failing_case(skill: Path) -> None:
    """A case whose documented command does not do what its assertion wants: a `fail`."""
    config = json.loads((skill / "eval.config").read_text())
    config["evals"].append({
        "id": "mark-wrong", "prompt": "Mark this folder as checked, then as reviewed.",
        "expected_outcome": "out.txt says reviewed.",
        "steps": ["sh $SKILL_DIR/scripts/mark.sh --status ok > out.txt"],
        "assertions": [{"type": "file_contains", "path": "out.txt", "pattern": "reviewed"}],
        "timeout_s": 60})
    (skill / "eval.config").write_text(json.dumps(config, indent=2))


def test_starting_a_case_asks_the_server_for_no_concurrency_slot(server, tmp_path):
    port, env = server
    write_marketplace(tmp_path / "mp", 2, 6)
    proxy = ApiProxy("127.0.0.1", port)
    with proxy.running():
        done = aeval(proxy, env, "run", str(tmp_path / "mp"), "--runtime", "literal",
                     "--concurrency", "4", "--out", str(tmp_path / "out"), "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(s for s, _ in verdicts(tmp_path / "out").values()) == {"pass"}
    slots = {k: n for k, n in proxy.counts.items() if "/concurrency_limits/" in k}
    # one read per runtime per run (a limit the user set on `runtime:literal`), none per case
    assert not [k for k in slots if k.startswith("POST ")], slots
    assert sum(slots.values()) <= 1, slots
    assert proxy.counts["POST /api/artifacts/"] >= 14  # the cases did reach the server


def test_one_cases_artifact_refused_ends_that_case_error_and_resume_runs_it(server, tmp_path):
    port, env = server
    write_marketplace(tmp_path / "mp", 2, 4)
    add_failing_case(tmp_path / "mp" / "mark-checked-001")

    def one_case(r: Request) -> bool:
        return (r.method == "POST" and r.path.endswith("/artifacts/")
                and f'"{artifact_key("case", "mark-checked-000", "mark-2", "literal")}"'.encode()
                in r.body)

    proxy = ApiProxy("127.0.0.1", port, Faults(refuse=one_case))
    store = tmp_path / "out"
    with proxy.running():
        done = aeval(proxy, env, "run", str(tmp_path / "mp"), "--runtime", "literal",
                     "--concurrency", "4", "--out", str(store))
    assert proxy.refused["POST /api/artifacts/"] >= 6  # refused, and the client retried
    assert "internal error" not in done.stderr + done.stdout, done.stderr[-3000:]
    got = verdicts(store)
    status, reason = got.pop("mark-checked-000/mark-2")
    assert status == "error", reason
    assert "Prefect API" in reason and "/artifacts/" in reason and "503" in reason, reason
    assert got.pop("mark-checked-001/mark-wrong")[0] == "fail"
    assert {s for s, _ in got.values()} == {"pass"}, got
    # a failing case outranks an environment error: 1; without it the run says 3 (retry)
    assert done.returncode == 1, done.stderr[-3000:]
    (run_dir,) = (store / "runs").iterdir()
    assert not (run_dir / "mark-checked-000" / "literal" / "mark-2" / "grading.json").exists()

    with ApiProxy("127.0.0.1", port).running() as clean:
        again = aeval(clean, env, "run", "--resume", run_dir.name, "--out", str(store))
    assert again.returncode == 1, again.stderr[-3000:]
    after = verdicts(store)
    assert after["mark-checked-000/mark-2"][0] == "pass", after["mark-checked-000/mark-2"]
    assert after["mark-checked-001/mark-wrong"][0] == "fail"
    # the resume ran the one unrecorded case, not the others again
    assert clean.counts["POST /api/artifacts/"] < proxy.counts["POST /api/artifacts/"]


def test_refused_artifact_without_a_failure_exits_3(server, tmp_path):
    port, env = server
    write_marketplace(tmp_path / "mp", 1, 3)

    def one_case(r: Request) -> bool:
        return (r.method == "POST" and r.path.endswith("/artifacts/")
                and f'"{artifact_key("case", "mark-checked-000", "mark-1", "literal")}"'.encode()
                in r.body)

    with ApiProxy("127.0.0.1", port, Faults(refuse=one_case)).running() as proxy:
        done = aeval(proxy, env, "run", str(tmp_path / "mp"), "--runtime", "literal",
                     "--out", str(tmp_path / "out"), "-q")
    assert done.returncode == 3, done.stderr[-3000:]
    got = verdicts(tmp_path / "out")
    assert got.pop("mark-checked-000/mark-1")[0] == "error"
    assert {s for s, _ in got.values()} == {"pass"}


def test_flow_run_state_refused_exits_3_not_internal(server, tmp_path):
    port, env = server
    write_marketplace(tmp_path / "mp", 1, 1)

    def flow_state(r: Request) -> bool:
        return r.method == "POST" and r.key == "POST /api/flow_runs/{id}/set_state"

    with ApiProxy("127.0.0.1", port, Faults(refuse=flow_state)).running() as proxy:
        done = aeval(proxy, env, "run", str(tmp_path / "mp"), "--runtime", "literal",
                     "--out", str(tmp_path / "out"))
    assert done.returncode == 3, (done.returncode, done.stderr[-3000:])
    assert "internal error" not in done.stderr
    assert "Prefect API failed the run" in done.stderr and "--resume" in done.stderr


def test_200_cases_through_refusals_and_resets_keep_their_verdicts(server, tmp_path):
    """The load test: 20 skills x 9 cases, their 20 SKILL.md doc tests and a failing case in
    every fifth skill (204 cases) at
    --concurrency 8, 8 % of the requests refused with 503 and 2 % reset before they reach the
    server (a seeded draw). Prefect's client retries them; the run's verdicts and exit code
    are those the marketplace has without faults (its cases are deterministic)."""
    port, env = server
    mp = tmp_path / "mp"
    write_marketplace(mp, 20, 9)
    expected = {f"mark-checked-{s:03d}/{c}": "pass" for s in range(20)
                for c in [f"mark-{c}" for c in range(9)] + ["skill-md"]}
    for s in range(0, 20, 5):
        add_failing_case(mp / f"mark-checked-{s:03d}")
        expected[f"mark-checked-{s:03d}/mark-wrong"] = "fail"
    faults = Faults(share_503=0.08, share_reset=0.02, seed=int(os.environ.get("SEED", "29")))
    with ApiProxy("127.0.0.1", port, faults).running() as proxy:
        done = aeval(proxy, env, "run", str(mp), "--runtime", "literal", "--concurrency", "8",
                     "--out", str(tmp_path / "out"), "-q", timeout=540)
    assert sum(proxy.refused.values()) > 20, proxy.refused  # the faults did happen
    assert "internal error" not in done.stderr, done.stderr[-3000:]
    got = {k: s for k, (s, _) in verdicts(tmp_path / "out").items()}
    assert got == expected, {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
    assert done.returncode == 1, done.stderr[-3000:]


def test_a_runtime_limit_set_on_the_server_bounds_its_chains_in_the_process(server, tmp_path):
    """`prefect concurrency-limit create runtime:literal 2` (the v2 limit
    `tag:runtime:literal`): read once per run, at most 2 literal case chains run at once in
    the aeval process, whatever --concurrency; the attempts' own clocks say so."""
    port, env = server
    mp = tmp_path / "mp"
    write_marketplace(mp, 1, 8)
    config = json.loads((mp / "mark-checked-000" / "eval.config").read_text())
    for case in config["evals"]:
        case["steps"] = ["sleep 1", *case["steps"]]
    (mp / "mark-checked-000" / "eval.config").write_text(json.dumps(config))
    limits = "v2/concurrency_limits/"
    server_api(port, "POST", limits, {"name": "tag:runtime:literal", "limit": 2})
    try:
        with ApiProxy("127.0.0.1", port).running() as proxy:
            done = aeval(proxy, env, "run", str(mp), "--runtime", "literal", "--concurrency",
                         "6", "--out", str(tmp_path / "out"), "-q")
    finally:
        server_api(port, "DELETE", limits + "tag:runtime:literal")
    assert done.returncode == 0, done.stderr[-3000:]
    from datetime import datetime

    spans = []
    for attempt in (tmp_path / "out").glob("runs/*/mark-checked-000/literal/mark-*/attempts/1/"
                                           "attempt.json"):
        a = json.loads(attempt.read_text())
        spans.append((datetime.fromisoformat(a["started_at"]),
                      datetime.fromisoformat(a["ended_at"])))
    assert len(spans) == 8
    at_once = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert at_once <= 2, sorted(spans)
    assert proxy.counts["GET /api/v2/concurrency_limits/tag:runtime:literal"] == 1
    assert not [k for k in proxy.counts if k.startswith("POST /api/v2/concurrency_limits")]
