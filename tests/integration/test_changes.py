"""Change detection on a real git repository: only touched skills are evaluated."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from aeval.adapters.git import GitError, changed_skills
from aeval.deployments.cli.main import main

pytestmark = pytest.mark.integration


def sh(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def skill(repo: Path, name: str, step: str = "echo ok > out.txt") -> Path:
    d = repo / "skills" / name
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: skill {name}\n---\nBody\n")
    (d / "scripts" / "run.sh").write_text("echo run\n")
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "c", "prompt": "p", "expected_outcome": "o", "steps": [step],
        "assertions": [{"type": "file_exists", "path": "out.txt"}]}]}))
    return d


def init_repo(r: Path) -> Path:
    """An empty git repository at ``r`` on branch main, with a committer set."""
    r.mkdir()
    sh(r, "init", "-q", "-b", "main")
    sh(r, "config", "user.email", "t@example.com")
    sh(r, "config", "user.name", "t")
    return r


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "repo")
    for n in ("alpha", "beta", "gamma"):
        skill(r, n)
    (r / "README.md").write_text("marketplace\n")
    sh(r, "add", "-A")
    sh(r, "commit", "-qm", "three skills")
    return r


def commit(repo: Path, msg: str = "change") -> None:
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", msg)


def test_a_change_deep_in_one_skill_selects_only_that_skill(repo):
    (repo / "skills" / "beta" / "scripts" / "run.sh").write_text("echo changed\n")
    (repo / "README.md").write_text("docs only\n")
    commit(repo)
    cs = changed_skills(repo, "HEAD~1")
    assert cs.skills == [repo / "skills" / "beta"]
    assert cs.ignored == ["README.md"] and cs.deleted == []


def test_deleted_skill_is_skipped_with_a_note_and_renamed_skill_follows(repo):
    sh(repo, "rm", "-rq", "skills/gamma")
    sh(repo, "mv", "skills/alpha", "skills/alpha-two")
    commit(repo)
    cs = changed_skills(repo, "HEAD~1")
    assert cs.skills == [repo / "skills" / "alpha-two"]
    assert cs.deleted == ["skills/gamma"]
    assert "skipped deleted skill skills/gamma" in cs.notes()


def test_merge_base_semantics(repo):
    base = sh(repo, "rev-parse", "HEAD")
    sh(repo, "checkout", "-qb", "feature")
    (repo / "skills" / "alpha" / "SKILL.md").write_text(
        "---\nname: alpha\ndescription: changed\n---\n")
    commit(repo)
    sh(repo, "checkout", "-q", "main")
    (repo / "skills" / "gamma" / "SKILL.md").write_text(
        "---\nname: gamma\ndescription: on main\n---\n")
    commit(repo)
    sh(repo, "checkout", "-q", "feature")
    # main moved on after the branch: base...HEAD still shows only the branch's own change
    assert changed_skills(repo, "main").skills == [repo / "skills" / "alpha"]
    assert changed_skills(repo, base).skills == [repo / "skills" / "alpha"]


def test_unknown_ref_is_a_clear_error(repo):
    with pytest.raises(GitError, match="nope"):
        changed_skills(repo, "nope")


@pytest.mark.usefixtures("prefect_harness")
def test_run_changed_since_evaluates_only_the_changed_skill(repo, tmp_path, capsys):
    (repo / "skills" / "beta" / "SKILL.md").write_text(
        "---\nname: beta\ndescription: skill beta, edited\n---\nBody\n")
    commit(repo)
    code = main(["run", str(repo), "--changed-since", "HEAD~1", "--out", str(tmp_path / "s")])
    assert code == 0
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    run = json.loads((rd / "run.json").read_text())
    assert [s["name"] for s in run["skills"]] == ["beta"]
    assert run["base"] == sh(repo, "rev-parse", "HEAD~1")
    assert run["head"] == sh(repo, "rev-parse", "HEAD")
    assert "1 changed skill(s): skills/beta" in capsys.readouterr().out


@pytest.mark.usefixtures("prefect_harness")
def test_no_changed_skill_exits_0_without_running(repo, tmp_path, capsys):
    (repo / "README.md").write_text("docs only\n")
    commit(repo)
    assert main(["run", str(repo), "--changed-since", "HEAD~1", "--out",
                 str(tmp_path / "s")]) == 0
    assert "no skill changed" in capsys.readouterr().out
    assert not (tmp_path / "s" / "runs").exists()


@pytest.mark.usefixtures("prefect_harness")
def test_mr_flow_fails_when_a_changed_skill_fails(repo, tmp_path):
    from aeval.flows.mr import evaluate_mr

    cfg = repo / "skills" / "gamma" / "eval.config"
    cfg.write_text(cfg.read_text().replace("echo ok > out.txt", "exit 1"))
    commit(repo)
    from aeval.errors import GateFailed
    from aeval.run.requests import MrRequest

    state = evaluate_mr(MrRequest(repo=str(repo), base="HEAD~1", head="HEAD",
                                  store=str(tmp_path / "s")), return_state=True)
    assert state.is_failed() and state.message.startswith("aeval gate: exit 1: ")
    with pytest.raises(GateFailed) as failed:
        state.result()
    assert failed.value.exit_code == 1
    from prefect import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
    )

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
        (child,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[run.id])))
        tasks = {t.name: t for t in client.read_task_runs(flow_run_filter=FlowRunFilter(
            id={"any_": [child.id]}))}
        summaries = {str(a.flow_run_id): a.data for a in client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["run-summary"])))}
    assert run.name == "mr: HEAD~1...HEAD"
    # the MR's own flow run (what its trigger links to) shows the run summary, with the gate
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    assert f"# aeval run {rd.name}" in summaries[str(run.id)]
    assert "Gate: exit 1" in summaries[str(run.id)]
    recorded = json.loads((rd / "run.json").read_text())
    assert (recorded["flow_run_id"], recorded["parent_flow_run_id"]) == (str(child.id),
                                                                        str(run.id))
    # the verdicts are Prefect states: the failing case's task run and the evaluate run fail
    case = tasks["case gamma/c [literal]"]
    assert case.state.is_failed() and case.state.name == "SkillDefect", case.state
    assert child.state.is_failed() and child.state.message.startswith("aeval gate: exit 1")
    assert [s["name"] for s in json.loads((rd / "run.json").read_text())["skills"]] == ["gamma"]


@pytest.mark.usefixtures("prefect_harness")
def test_mr_flow_evaluates_head_whatever_the_repository_has_checked_out(repo, tmp_path):
    """Served at base and triggered with head = a defective commit, the MR flow ended
    `Completed('every case passed')`: it evaluated the serving checkout. It clones for the
    run and checks out head itself, and leaves the repository's working tree alone."""
    from aeval.flows.mr import evaluate_mr
    from aeval.run.requests import MrRequest

    base = sh(repo, "rev-parse", "HEAD")
    cfg = repo / "skills" / "gamma" / "eval.config"
    cfg.write_text(cfg.read_text().replace("echo ok > out.txt", "exit 1"))
    commit(repo, "gamma: a defect")
    head = sh(repo, "rev-parse", "HEAD")
    sh(repo, "checkout", "-q", base)  # the serving checkout stays at base
    state = evaluate_mr(MrRequest(repo=str(repo), base=base, head=head, mr_iid=3,
                                  store=str(tmp_path / "s")), return_state=True)
    assert state.is_failed() and state.message.startswith("aeval gate: exit 1: "), state
    assert "gamma/c" in state.message
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    done = json.loads((rd / "run.json").read_text())
    assert done["head"] == head and done["base"] == base
    assert sh(repo, "rev-parse", "HEAD") == base and not sh(repo, "status", "--porcelain")
    from prefect import get_client

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
    assert run.name == f"mr 3: {base[:12]}...{head[:12]}"  # not two 40-character shas


@pytest.mark.usefixtures("prefect_harness")
def test_mr_flow_fails_clearly_when_head_cannot_be_had(repo, tmp_path):
    from aeval.flows.mr import evaluate_mr
    from aeval.run.requests import MrRequest

    missing = "0123456789abcdef0123456789abcdef01234567"
    state = evaluate_mr(MrRequest(repo=str(repo), base="HEAD", head=missing, mr_iid=5,
                                  store=str(tmp_path / "s")), return_state=True)
    assert state.is_failed() and state.name == "CheckoutFailed", state
    assert state.message.startswith(f"aeval: cannot evaluate head {missing[:12]}: head "
                                    f"{missing} is not in {repo}"), state.message
    assert "refs/merge-requests/5" in state.message
    assert not (tmp_path / "s" / "runs").exists()


@pytest.mark.usefixtures("prefect_harness")
def test_mr_flow_misconfigured_is_failed_before_anything_runs(repo, tmp_path, monkeypatch):
    from aeval.flows.mr import evaluate_mr
    from aeval.run.requests import MrRequest

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    state = evaluate_mr(MrRequest(repo=str(repo), base="HEAD~1", head="HEAD",
                                  runtimes=["builtin"], model="openai/gpt-4o",
                                  store=str(tmp_path / "s")), return_state=True)
    assert state.is_failed() and state.name == "Misconfigured", state
    assert state.message == ("aeval gate: exit 2: --model openai/gpt-4o: OPENAI_API_KEY is not "
                             "set (the provider's key; or --api-base for a server of your own)")
