"""The GitLab CI template as shipped, its script lines run one by one as a runner would:
included as the README says (inputs aeval_project / aeval_ref), it installs aeval from that
project's repository at that ref (served by the loopback fake GitLab over git's HTTP protocol,
with the job token), then aeval-evaluate runs the changed skill and aeval-report posts on the
fake MR; the reports the jobs leave are checked.

The default named `aeval-skills==0.1.0`, which is on no index: every job failed in
before_script with exit 1, the "skill defect" code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES
from tests.fakes.fake_gitlab import FakeGitLab, diff_from_texts

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deployments" / "gitlab" / "aeval.gitlab-ci.yml"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
TOKEN = "glpat-fake-template-0123456789"
JOB_TOKEN = "glcbt-fake-job-token-abcdef"
SKILL_MD = "skills/segmentation/SKILL.md"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c",
                           "user.name=t", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def included(inputs: dict[str, str]) -> dict:
    """The template as GitLab includes it: the spec header read, `$[[ inputs.x ]]`
    interpolated (defaults for the inputs not given), the jobs document loaded."""
    header, body = TEMPLATE.read_text().split("\n---\n", 1)
    spec = yaml.safe_load(header)["spec"]["inputs"]
    values = {k: inputs.get(k, v.get("default")) for k, v in spec.items()}
    missing = [k for k, v in values.items() if v is None]
    assert not missing, f"required inputs without a value: {missing}"
    text = re.sub(r"\$\[\[\s*inputs\.([\w-]+)\s*\]\]", lambda m: str(values[m.group(1)]), body)
    assert "$[[" not in text
    return yaml.safe_load(text)


def expand(value: str, env: dict[str, str]) -> str:
    """A CI variable's value with $VAR / ${VAR} references expanded, as the runner does."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""),
                  value)


def job_env(ci: dict, job: str, base_env: dict[str, str]) -> dict[str, str]:
    env = dict(base_env)
    for source in (ci["variables"], ci[job].get("variables", {})):
        for k, v in source.items():
            env[k] = expand(str(v), env)
    return env


def run_job(ci: dict, job: str, env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """before_script + script in one bash with `set -eo pipefail` (the runner's shell), then
    after_script in another whose status is ignored; the job's exit code and output."""
    spec = {**ci[".aeval-base"], **ci[job]}
    lines = [*spec.get("before_script", []), *spec["script"]]
    proc = subprocess.run(["bash", "-c", "set -eo pipefail\n" + "\n".join(lines)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=480)
    out = proc.stdout + proc.stderr
    if spec.get("after_script"):
        after = subprocess.run(["bash", "-c", "\n".join(spec["after_script"])], cwd=cwd,
                               env=env, capture_output=True, text=True, timeout=60)
        out += after.stdout + after.stderr
    return proc.returncode, out


def aeval_project(tmp: Path) -> Path:
    """aeval's repository as the GitLab project `tools/aeval` holds it: the working tree's
    files (committed or not) in one commit tagged v<version>, as a bare repository ready for
    git's dumb HTTP protocol."""
    work = tmp / "aeval-src"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard",
                            "-z"], check=True, capture_output=True, text=True).stdout
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / rel)
    git(work.parent, "init", "-q", "-b", "main", str(work))
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", f"aeval {VERSION}")
    git(work, "tag", f"v{VERSION}")
    bare = tmp / "aeval.git"
    git(tmp, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "update-server-info")
    return bare


def job_python(tmp: Path) -> Path:
    """The job image's Python: a fresh environment without aeval, whose other packages come
    from this test's environment (so the install builds and installs aeval itself, from the
    repository, without downloading its ~150 dependencies)."""
    env_dir = tmp / "image"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    deps = tmp / "deps"
    deps.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if entry.name.startswith(("aeval", "__editable__", "_aeval")) or entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    own = next((env_dir / "lib").glob("python3*/site-packages"))
    (own / "deps.pth").write_text(str(deps) + "\n")
    return env_dir / "bin"


@pytest.fixture
def marketplace(tmp_path: Path) -> tuple[Path, str, str, str]:
    """The marketplace's checkout in the job (GIT_DEPTH 0): base, then an MR commit that
    changes the segmentation skill's SKILL.md (whose documented action is wrong)."""
    repo = tmp_path / "marketplace"
    shutil.copytree(EXAMPLES, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    md = repo / SKILL_MD
    old = md.read_text()
    md.write_text(old + "\nTrain on CPU first.\n")
    git(repo, "commit", "-q", "-a", "-m", "segmentation: a note")
    return repo, base, git(repo, "rev-parse", "HEAD"), diff_from_texts(old, md.read_text())


def test_the_template_installs_from_its_project_and_leaves_its_reports(tmp_path, marketplace):
    repo, base, head, diff = marketplace
    bare = aeval_project(tmp_path)
    image_bin = job_python(tmp_path)
    fake = FakeGitLab(token=TOKEN, git_repos={"tools/aeval": bare}, job_token=JOB_TOKEN,
                      diffs=[{"old_path": SKILL_MD, "new_path": SKILL_MD, "diff": diff}],
                      diff_refs={"base_sha": base, "start_sha": base, "head_sha": head})
    # exactly the include the template's header documents
    ci = included({"aeval_project": "tools/aeval", "aeval_ref": f"v{VERSION}"})
    with fake:
        host = fake.url.removeprefix("http://")
        keep = ("HOME", "LANG", "TMPDIR", "PREFECT_HOME", "AEVAL_CACHE_DIR",
                "PREFECT_SERVER_ANALYTICS_ENABLED", "PIP_FIND_LINKS", "PIP_CERT",
                "PIP_DEFAULT_TIMEOUT")
        system_path = [p for p in os.environ["PATH"].split(os.pathsep)
                       if p and Path(p).resolve() != Path(sys.executable).parent.resolve()]
        base_env = {k: os.environ[k] for k in keep if k in os.environ} | {
            "PATH": os.pathsep.join([str(image_bin), *system_path]),
            "CI": "true", "GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_SERVER_URL": fake.url, "CI_SERVER_PROTOCOL": "http", "CI_SERVER_FQDN": host,
            "CI_SERVER_HOST": "127.0.0.1", "CI_JOB_TOKEN": JOB_TOKEN,
            "CI_PROJECT_DIR": str(repo), "CI_PROJECT_ID": str(fake.project_id),
            "CI_PROJECT_URL": f"{fake.url}/{fake.project_path}",
            "CI_MERGE_REQUEST_IID": str(fake.mr_iid),
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_COMMIT_SHA": head,
            "CI_JOB_URL": f"{fake.url}/{fake.project_path}/-/jobs/1"}
        assert subprocess.run(["bash", "-c", "command -v aeval"], env=base_env,
                              capture_output=True).returncode != 0, "aeval must not be there"

        env = job_env(ci, "aeval-evaluate", base_env)
        code, out = run_job(ci, "aeval-evaluate", env, repo)
        assert code == 1, out[-4000:]  # a skill defect: segmentation's documented action
        assert f"aeval {VERSION}" in out  # `aeval --version` after the install
        assert (image_bin / "aeval").is_file(), "installed into the job's Python"
        clones = [r for r in fake.requests if r.path.startswith("/tools/aeval.git/")]
        assert clones and all(r.status in (200, 401, 404) for r in clones)
        assert any(r.authorized and r.status == 200 for r in clones)
        (run_dir,) = (repo / ".aeval" / "runs").iterdir()
        junit = (run_dir / "junit.xml").read_text()
        assert "<failure" in junit and "segmentation" in junit

        # a project that has not set the token yet: the report job passes, says so once
        code, out = run_job(ci, "aeval-report", job_env(ci, "aeval-report", base_env), repo)
        assert code == 0, out[-4000:]
        assert "AEVAL_GITLAB_TOKEN is not set: nothing posted" in out
        assert not fake.notes and (repo / "gl-code-quality.json").is_file()

        env = job_env(ci, "aeval-report", base_env) | {"AEVAL_GITLAB_TOKEN": TOKEN}
        code, out = run_job(ci, "aeval-report", env, repo)
        assert code == 0, out[-4000:]
        quality = json.loads((repo / "gl-code-quality.json").read_text())
        assert isinstance(quality, list)
        assert all({"description", "fingerprint", "severity", "location"} <= set(q)
                   for q in quality)
        notes = [n["body"] for n in fake.notes]
        assert any("segmentation" in b for b in notes), notes
        assert any(f"{fake.url}/{fake.project_path}/-/jobs/1/artifacts/browse" in b
                   for b in notes), "the report link is the job's browsable artifacts"
        assert not any(TOKEN in b or JOB_TOKEN in b for b in notes)
        assert JOB_TOKEN not in out and TOKEN not in out


def test_the_template_needs_its_source_named():
    """Without aeval_project / aeval_ref GitLab refuses the include (required inputs)
    instead of installing a name that does not exist."""
    header = yaml.safe_load(TEMPLATE.read_text().split("\n---\n", 1)[0])["spec"]["inputs"]
    assert "default" not in header["aeval_project"] and "default" not in header["aeval_ref"]
    ci = included({"aeval_project": "tools/aeval", "aeval_ref": "v9"})
    assert ci["variables"]["AEVAL_PIP_SPEC"] == ""
    assert ci["variables"]["AEVAL_SOURCE"].endswith("/tools/aeval.git@v9")
    for job in ("aeval-evaluate", "aeval-report", "aeval-prefect"):
        spec = {**ci[".aeval-base"], **ci[job]}
        assert spec["timeout"] == "1h"
        assert spec["allow_failure"] == {"exit_codes": [3]}
        assert spec["retry"]["exit_codes"] == [3]
    prefect = ci["aeval-prefect"]
    # the manual button only where a Prefect server is configured
    manual = [r for r in prefect["rules"] if r.get("when") == "manual"]
    assert manual and all("$PREFECT_API_URL" in r["if"] for r in manual)
    assert prefect["artifacts"]["reports"] == {"junit": ".aeval/runs/*/junit.xml",
                                               "codequality": "gl-code-quality.json"}
    assert "--timeout" in prefect["script"][0]
