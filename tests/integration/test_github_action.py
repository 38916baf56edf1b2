"""The composite Action as shipped (action.yml), its `run:` steps run one by one as a runner
would: each in `bash --noprofile --norc -eo pipefail`, with the environment GitHub sets
(GITHUB_*, the step's `env:` with its `${{ }}` expressions resolved, GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files, GITHUB_PATH added to PATH for the steps after), `if:` conditions
evaluated, and the `uses:` steps played by the test: setup-python is this test's Python (its
exact version as output); actions/cache/restore and save copy the path from and to a store
that outlives the job (as GitHub's cache outlives the runner); upload/download-artifact copy
the listed paths.

The fork-safe pattern of docs/github.md: a `pull_request` job runs the skills without a token and
uploads the run folder; a `workflow_run` job on a fresh checkout downloads it and posts on
the fake GitHub with the token, which only its post step holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

from tests.docs import documented_section
from tests.fakes.fake_github import FakeGitHub
from tests.integration.test_gitlab_template import (  # noqa: F401  (fixture)
    SKILL_MD,
    git,
    job_python,
    marketplace,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
TOKEN = "ghs_fakeActionToken_0123456789abcdef"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


# ---- a runner, as far as the Action needs one -------------------------------------------------


def evaluate(expr: str, ctx: dict):
    """GitHub's expression language as the Action uses it: context paths, '...' strings,
    ==, !=, &&, ||, always()."""
    expr = expr.strip()
    if "||" in expr:
        value = ""
        for part in expr.split("||"):
            if value := evaluate(part, ctx):
                return value
        return value
    if "&&" in expr:
        return all(evaluate(p, ctx) for p in expr.split("&&"))
    for op in ("!=", "=="):
        if op in expr:
            a, b = expr.split(op, 1)
            return (evaluate(a, ctx) == evaluate(b, ctx)) == (op == "==")
    if expr == "always()":
        return True
    if expr.startswith("'") and expr.endswith("'"):
        return expr[1:-1]
    node = ctx
    for key in expr.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return "" if node is None else node


def substitute(value: str, ctx: dict) -> str:
    return EXPR.sub(lambda m: str(evaluate(m.group(1), ctx)), str(value))


ARCH = {"x86_64": "X64", "aarch64": "ARM64", "arm64": "ARM64"}.get(platform.machine(), "X64")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
VENV_KEY = re.compile(rf"aeval-venv-Linux-{ARCH}-py(?P<python>[\d.]+)-{re.escape(VERSION)}-"
                      r"(?P<source>[0-9a-f]{16})-github")


class Job:
    """One job that uses the Action: its workspace, its context, the steps it ran. Its runner
    is a fresh machine: its tool cache (the same path on every runner, as on GitHub's) starts
    empty, and only what `caches` (GitHub's cache store) holds is restored into it."""

    def __init__(self, workspace: Path, base_env: dict[str, str], github: dict,
                 inputs: dict[str, str], artifacts: Path, caches: Path | None = None):
        self.workspace, self.base_env, self.artifacts = workspace, base_env, artifacts
        self.caches = caches or workspace.parent / "caches"
        self.tool_cache = self.caches.parent / "hostedtoolcache"
        shutil.rmtree(self.tool_cache, ignore_errors=True)
        self.tool_cache.mkdir(parents=True)
        self.ctx: dict = {"github": github, "steps": {}, "env": {}}
        self.ctx["inputs"] = {k: substitute(inputs.get(k, v.get("default", "")), self.ctx)
                              for k, v in ACTION["inputs"].items()}
        self.ran: list[tuple[str, int, str]] = []
        self.envs: dict[str, dict[str, str]] = {}
        self.added_path: list[str] = []
        self.summary = workspace.parent / f"summary-{workspace.name}.md"

    def run(self) -> int:
        """The steps in order; after a failure only `always()` steps; the job's exit code."""
        failed = 0
        for step in ACTION["runs"]["steps"]:
            cond = step.get("if")
            if failed and not (cond and "always()" in cond):
                continue
            if cond and not evaluate(cond, self.ctx):
                continue
            code = self._uses(step) if "uses" in step else self._run(step)
            failed = failed or code
        return failed

    def _uses(self, step: dict) -> int:
        with_ = {k: substitute(v, self.ctx) for k, v in (step.get("with") or {}).items()}
        name = step["uses"].split("@")[0]
        outputs: dict[str, str] = {}
        if name == "actions/setup-python":
            assert with_["python-version"] == "3.11"
            python = shutil.which("python3", path=self.base_env["PATH"])
            outputs = {"python-path": python, "python-version": subprocess.run(
                [python, "-c", "import platform; print(platform.python_version())"],
                check=True, capture_output=True, text=True).stdout.strip()}
        elif name == "actions/cache":  # pip's download cache: only its key and path
            deps = hashlib.sha256((Path(self.ctx["github"]["action_path"]) /
                                   "pyproject.toml").read_bytes()).hexdigest()[:16]
            assert with_["key"] == f"aeval-pip-Linux-py3.11-{deps}"
            assert with_["path"] == f"{self.base_env['HOME']}/.cache/pip"
        elif name in ("actions/cache/restore", "actions/cache/save"):  # aeval's venv
            match = VENV_KEY.fullmatch(with_["key"])
            assert match, with_["key"]
            assert match["python"] == self.ctx["steps"]["python"]["outputs"]["python-version"]
            assert with_["path"] == f"{self.tool_cache}/aeval/venv"
            stored = self.caches / with_["key"]
            if name == "actions/cache/restore" and stored.is_dir():
                shutil.copytree(stored, with_["path"], symlinks=True, dirs_exist_ok=True)
                outputs = {"cache-hit": "true"}
            elif name == "actions/cache/save" and not stored.exists():  # entries never change
                shutil.copytree(with_["path"], stored, symlinks=True)
        elif name == "actions/upload-artifact":
            assert with_["include-hidden-files"].lower() == "true"  # .aeval is a dot-folder
            dest = self.artifacts / with_["name"]
            for rel in filter(None, (p.strip() for p in with_["path"].splitlines())):
                src = self.workspace / rel
                if src.is_dir():
                    shutil.copytree(src, dest / Path(rel).relative_to(".aeval"),
                                    dirs_exist_ok=True)
                elif src.is_file():
                    (dest / Path(rel).relative_to(".aeval")).parent.mkdir(parents=True,
                                                                          exist_ok=True)
                    shutil.copy2(src, dest / Path(rel).relative_to(".aeval"))
        elif name == "actions/download-artifact":
            assert with_["run-id"] == str(self.ctx["github"]["event"].get(
                "workflow_run", {}).get("id") or self.ctx["github"]["run_id"])
            shutil.copytree(self.artifacts / with_["name"], self.workspace / with_["path"],
                            dirs_exist_ok=True)
        else:
            raise AssertionError(f"unexpected action {name}")
        if step.get("id"):
            self.ctx["steps"][step["id"]] = {"outputs": outputs}
        self.ran.append((step["name"], 0, ""))
        return 0

    def _run(self, step: dict) -> int:
        assert step["shell"] == "bash" and "${{" not in step["run"], \
            "expressions reach scripts through env only"
        output = self.workspace.parent / f"output-{len(self.ran)}"
        output.write_text("")
        path_file = self.workspace.parent / f"path-{len(self.ran)}"
        path_file.write_text("")
        github = self.ctx["github"]
        env = dict(self.base_env) | {
            "PATH": os.pathsep.join([*reversed(self.added_path), self.base_env["PATH"]]),
            "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_REPOSITORY": github["repository"], "GITHUB_EVENT_NAME": github["event_name"],
            "GITHUB_EVENT_PATH": github["event_path"], "GITHUB_API_URL": github["api_url"],
            "GITHUB_RUN_ID": str(github["run_id"]), "GITHUB_SHA": github["sha"],
            "GITHUB_ACTION_PATH": github["action_path"], "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(self.summary), "GITHUB_PATH": str(path_file),
            "RUNNER_TEMP": str(self.workspace.parent), "RUNNER_OS": "Linux",
            "RUNNER_ARCH": ARCH, "RUNNER_TOOL_CACHE": str(self.tool_cache)}
        env |= {k: substitute(v, self.ctx) for k, v in (step.get("env") or {}).items()}
        self.envs[step["name"]] = env
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step["run"]], cwd=self.workspace, env=env, capture_output=True,
                              text=True, timeout=480)
        if step.get("id"):
            outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()
                           if "=" in line)
            self.ctx["steps"][step["id"]] = {"outputs": outputs}
        self.added_path += path_file.read_text().splitlines()
        self.ran.append((step["name"], proc.returncode, proc.stdout + proc.stderr))
        return proc.returncode

    def output(self) -> str:
        return "\n".join(out for _, _, out in self.ran)


def aeval_checkout(tmp: Path) -> Path:
    """The Action's own checkout (`github.action_path`): aeval's working tree."""
    dst = tmp / "_actions" / "aeval"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard",
                            "-z"], check=True, capture_output=True, text=True).stdout
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    return dst


def runner_env(image_bin: Path) -> dict[str, str]:
    keep = ("HOME", "LANG", "TMPDIR", "PREFECT_HOME", "AEVAL_CACHE_DIR",
            "PREFECT_SERVER_ANALYTICS_ENABLED", "PIP_FIND_LINKS", "PIP_CERT",
            "PIP_DEFAULT_TIMEOUT")
    system_path = [p for p in os.environ["PATH"].split(os.pathsep)
                   if p and Path(p).resolve() != Path(sys.executable).parent.resolve()]
    env = {k: os.environ[k] for k in keep if k in os.environ} | {
        "PATH": os.pathsep.join([str(image_bin), *system_path])}
    deps = image_bin.parent.parent / "deps"
    if deps.is_dir():  # job_python's: aeval's dependencies, for the venv the Action makes too
        env["PYTHONPATH"] = str(deps)
    return env


def break_python(venv: Path, gone: Path) -> None:
    """The venv's python links point at a Python that is gone (another runner image)."""
    for link in (venv / "bin").iterdir():
        if link.is_symlink() and link.name.startswith("python"):
            link.unlink()
            link.symlink_to(gone / link.name)


def verdicts(workspace: Path) -> dict[str, str]:
    """Each case's outcome in the run folder the job left (junit.xml's testcases)."""
    (junit,) = workspace.glob(".aeval/runs/*/junit.xml")
    return {f"{case.get('classname')}/{case.get('name')}":
            next((child.tag for child in case if child.tag in ("failure", "error", "skipped")),
                 "passed") for case in ElementTree.parse(junit).iter("testcase")}


def write_event(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data))
    return str(path)


# ---- the tests --------------------------------------------------------------------------------


def test_the_fork_safe_pair_runs_then_posts_with_the_token_only_where_it_posts(
        tmp_path, marketplace):  # noqa: F811
    repo, base, head, diff = marketplace
    image_bin = job_python(tmp_path)
    action_path = aeval_checkout(tmp_path)
    artifacts, caches = tmp_path / "artifacts", tmp_path / "caches"
    fake = FakeGitHub(token=TOKEN, files=[{"filename": SKILL_MD, "patch": diff}],
                      head_sha=head, base_sha=base, repo="acme/skills", number=12)
    base_env = runner_env(image_bin)
    assert subprocess.run(["bash", "-c", "command -v aeval"], env=base_env,
                          capture_output=True).returncode != 0, "aeval must not be there"
    with fake:
        github = {"repository": fake.repo, "api_url": fake.url, "action_path": str(action_path),
                  "run_id": 1001, "sha": head, "token": "ghs_readOnlyForkToken"}
        pr_event = {"action": "synchronize", "number": 12, "pull_request": {
            "number": 12, "base": {"sha": base}, "head": {"sha": head, "repo": {
                "full_name": "fork-owner/skills"}}}}
        run = Job(repo, base_env, github | {
            "event_name": "pull_request", "event": pr_event,
            "event_path": write_event(tmp_path / "pr-event.json", pr_event)},
            {}, artifacts, caches)  # the workflow gives the run step no token
        assert run.run() == 1, run.output()[-4000:]  # segmentation's documented action fails
        steps = {name: code for name, code, _ in run.ran}
        assert steps["Evaluate the changed skills"] == 1 and steps["Upload the run folder"] == 0
        # a cold runner: nothing restored, aeval installed into its venv, which is saved at
        # once (a failing gate ends the job before actions/cache's own save would run)
        assert run.ctx["steps"]["venv-cache"]["outputs"] == {}
        assert steps["Install aeval"] == 0 and steps["Save aeval's venv"] == 0
        (stored,) = caches.iterdir()
        assert (stored / "bin" / "aeval").is_file() and not (stored / "bin" / "pip").is_symlink()
        assert (stored / ".aeval-key").read_text().strip() == stored.name
        assert "Post on the pull request" not in steps
        assert run.ctx["steps"]["run"]["outputs"]["exit-code"] == "1"
        assert "## aeval · gate: exit 1" in run.summary.read_text()
        assert not any(k.endswith("TOKEN") and v for env in run.envs.values()
                       for k, v in env.items())
        uploaded = artifacts / "aeval-run"
        assert (uploaded / "pr-number").read_text().strip() == "12"
        assert list(uploaded.glob("runs/*/junit.xml"))
        assert fake.requests == []

        # the same pull request again, on a fresh runner: the venv is restored, nothing is
        # installed, and aeval gives the same verdicts
        rerun_repo = tmp_path / "rerun" / "marketplace"
        git(tmp_path, "clone", "-q", str(repo), str(rerun_repo))
        git(rerun_repo, "checkout", "-q", head)
        rerun = Job(rerun_repo, base_env, github | {
            "run_id": 1003, "event_name": "pull_request", "event": pr_event,
            "event_path": write_event(tmp_path / "pr-event.json", pr_event)},
            {}, tmp_path / "artifacts-rerun", caches)
        assert rerun.run() == 1, rerun.output()[-4000:]
        names = [n for n, _, _ in rerun.ran]
        assert rerun.ctx["steps"]["venv-cache"]["outputs"] == {"cache-hit": "true"}
        assert rerun.ctx["steps"]["venv"]["outputs"] == {"usable": "true"}
        assert not {"Cache pip", "Install aeval", "Save aeval's venv"} & set(names), names
        assert dict((n, c) for n, c, _ in rerun.ran)["Evaluate the changed skills"] == 1
        assert verdicts(rerun_repo) == verdicts(repo)
        assert "failure" in verdicts(repo).values()  # segmentation's cases fail in both
        assert "## aeval · gate: exit 1" in rerun.summary.read_text()

        # the workflow_run job: a fresh checkout of the tested head at the same path
        shutil.move(repo, tmp_path / "run-job-workspace")
        git(tmp_path, "clone", "-q", str(tmp_path / "run-job-workspace"), str(repo))
        git(repo, "checkout", "-q", head)
        wr_event = {"action": "completed", "workflow_run": {
            "id": 1001, "head_sha": head, "event": "pull_request", "pull_requests": []}}
        # ... whose cached venv no longer starts (its python links point at a Python that is
        # gone): it is installed afresh, and the job goes on
        break_python(stored, tmp_path / "gone")
        post = Job(repo, base_env, github | {
            "run_id": 1002, "token": TOKEN, "event_name": "workflow_run", "event": wr_event,
            "event_path": write_event(tmp_path / "wr-event.json", wr_event)},
            {"mode": "post", "github-token": TOKEN}, artifacts, caches)
        assert post.run() == 0, post.output()[-4000:]
        assert [n for n, _, _ in post.ran] == [
            "Check the event against the fork policy", "Set up Python", "Key the caches",
            "Restore aeval's venv", "Check for a working aeval", "Cache pip", "Install aeval",
            "Download the run folder", "Post on the pull request"]
        assert post.ctx["steps"]["venv-cache"]["outputs"] == {"cache-hit": "true"}
        assert "does not start aeval" in post.ran[4][2]
        holders = [name for name, env in post.envs.items() if TOKEN in env.values()]
        assert holders == ["Post on the pull request"]
        comments = {c["body"].split("\n", 1)[0]: c["body"] for c in fake.issue_comments}
        assert [k for k in comments if k.startswith("<!-- aeval:skill=segmentation ")]
        # S0's documented actions, fixed with no model on lines outside the PR's diff
        assert "scripts/run.py train --data fixtures" in comments["<!-- aeval:fallback -->"]
        assert len(comments) == 2
        (check,) = fake.check_runs
        assert (check["head_sha"], check["conclusion"]) == (head, "failure")
        assert "## aeval · gate: exit 1" in post.summary.read_text()
        everything = post.output() + run.output() + json.dumps(fake.issue_comments) + "".join(
            p.read_text(errors="replace") for p in (repo / ".aeval").rglob("*") if p.is_file())
        assert TOKEN not in everything


def test_pull_request_target_is_refused_and_a_fork_pr_does_not_post(tmp_path):
    base_env = runner_env(job_python(tmp_path))
    action_path, caches = str(aeval_checkout(tmp_path)), tmp_path / "caches"
    (tmp_path / "ws0").mkdir()
    job = Job(tmp_path / "ws0", base_env, {
        "repository": "acme/skills", "api_url": "http://127.0.0.1:9", "action_path": action_path,
        "run_id": 1, "sha": "c" * 40, "token": TOKEN, "event_name": "pull_request_target",
        "event": {}, "event_path": write_event(tmp_path / "e.json", {})}, {}, tmp_path / "a",
        caches)
    assert job.run() == 2
    name, code, out = job.ran[0]
    assert (name, code) == ("Check the event against the fork policy", 2)
    assert "refusing to run skills on pull_request_target" in out
    assert [n for n, _, _ in job.ran[1:]] == ["Upload the run folder"]  # always(): nothing

    # mode post inside the fork's own pull_request run: nothing is posted, and it says why
    ws = tmp_path / "ws"
    (ws / ".aeval" / "runs" / "r1").mkdir(parents=True)
    (ws / ".aeval" / "runs" / "r1" / "run.json").write_text("{}")
    event = {"pull_request": {"number": 3, "head": {"repo": {"full_name": "fork/skills"}}}}
    job = Job(ws, base_env, {
        "repository": "acme/skills", "api_url": "http://127.0.0.1:9", "action_path": action_path,
        "run_id": 1, "sha": "c" * 40, "token": "", "event_name": "pull_request",
        "event": event, "event_path": write_event(tmp_path / "e2.json", event)},
        {"mode": "post", "github-token": TOKEN}, tmp_path / "a", caches)
    (tmp_path / "a" / "aeval-run").mkdir(parents=True)
    assert job.run() == 0, job.output()[-4000:]
    name, code, out = job.ran[-1]
    assert name == "Post on the pull request" and "a fork's pull request" in out


def test_the_venv_key_follows_what_the_venv_is_made_of(tmp_path):
    """The venv's cache key changes with what the venv holds (aeval's package files, its
    dependencies, the extras, the spec), not with the rest of the checkout; a venv left at the
    path under another key is removed before the restore."""
    action_path = aeval_checkout(tmp_path)
    steps = {s.get("id"): s for s in ACTION["runs"]["steps"]}
    (tmp_path / "ws").mkdir()

    def key(inputs: dict | None = None, env: dict | None = None) -> str:
        job = Job(tmp_path / "ws", runner_env(Path(sys.executable).parent) | (env or {}), {
            "repository": "acme/skills", "api_url": "http://127.0.0.1:9", "run_id": 1,
            "action_path": str(action_path), "sha": "c" * 40, "token": "",
            "event_name": "pull_request", "event": {}, "event_path": ""}, inputs or {},
            tmp_path / "a", tmp_path / "caches")
        assert job._uses(steps["python"]) == 0
        assert job._run(steps["keys"]) == 0, job.output()
        outputs = job.ctx["steps"]["keys"]["outputs"]
        assert outputs["venv"] == f"{job.tool_cache}/aeval/venv"
        return outputs["venv-key"]

    first = key()
    assert VENV_KEY.fullmatch(first), first
    (action_path / "README.md").write_text("another README\n")  # not in the package
    assert key() == first
    with (action_path / "tasks" / "__init__.py").open("a") as f:  # aeval's code, same version
        f.write("# a new commit on the branch the Action is used at\n")
    changed = key()
    assert changed != first and VENV_KEY.fullmatch(changed)
    with (action_path / "pyproject.toml").open("a") as f:
        f.write("# another dependency set\n")
    assert key() not in (first, changed)
    assert key({"args": "--runtime builtin --model openai/gpt-x"}).endswith("-github+models")
    assert key(env={"AEVAL_GRADER_MODEL": "openai/gpt-x"}).endswith("-github+models")
    spec = key({"aeval-spec": "aeval-skills==0.1.0"})
    assert "-spec-" in spec and spec != key({"aeval-spec": "aeval-skills==0.2.0"})

    # a venv an earlier job left at the path (a self-hosted runner): kept under its own key,
    # removed under another one so that the restore does not mix two venvs
    venv = tmp_path / "hostedtoolcache" / "aeval" / "venv"
    current = key()
    for stamp, kept in ((current, True), ("aeval-venv-an-older-one", False)):
        shutil.rmtree(tmp_path / "hostedtoolcache")
        job = Job(tmp_path / "ws", runner_env(Path(sys.executable).parent), {
            "action_path": str(action_path), "repository": "acme/skills", "api_url": "",
            "run_id": 1, "sha": "", "token": "", "event_name": "pull_request", "event": {},
            "event_path": ""}, {}, tmp_path / "a", tmp_path / "caches")
        (venv / "bin").mkdir(parents=True)
        (venv / ".aeval-key").write_text(stamp + "\n")
        assert job._uses(steps["python"]) == 0 and job._run(steps["keys"]) == 0
        assert venv.exists() == kept


def test_the_readme_workflows_use_the_action_as_it_is():
    """The two workflows docs/github.md shows parse, pass only inputs the Action has, keep the
    token out of the untrusted half and give the posting half exactly what it needs."""
    section = documented_section("On GitHub")
    run_wf, post_wf = (yaml.safe_load(b) for b in
                       re.findall(r"```yaml\n(.*?)```", section, re.S))
    assert "pull_request_target" not in section.replace("`pull_request_target`", "")
    for wf in (run_wf, post_wf):
        for job in wf["jobs"].values():
            for step in job["steps"]:
                if step.get("uses", "").startswith("your-org/aeval@"):
                    assert set(step.get("with") or {}) <= set(ACTION["inputs"])
    # yaml reads the bare key `on` as True
    assert list(run_wf[True]) == ["pull_request"] and run_wf["permissions"] == {
        "contents": "read"}
    assert "token" not in json.dumps(run_wf)
    assert post_wf[True]["workflow_run"]["workflows"] == [run_wf["name"]]
    assert post_wf["permissions"] == {"contents": "read", "actions": "read",
                                      "pull-requests": "write", "issues": "write",
                                      "checks": "write"}
    (post_step,) = [s for s in post_wf["jobs"]["post"]["steps"] if "with" in s and
                    s["with"].get("mode") == "post"]
    assert post_step["with"]["github-token"] == "${{ github.token }}"
