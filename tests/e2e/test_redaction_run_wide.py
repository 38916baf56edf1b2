"""Redaction is run-wide (issue 42, item 5). `deploy-notes` declares DEPLOY_TOKEN;
`release-digest`, in the same run, declares no credential, yet its run prints the token (the
value it got hold of: a file it read where it should not have, simulated here by a fixture of
its own) plainly, base64-encoded and in hex, writes it into an output file and into a failing
check's evidence. The value, in any of those forms, is found nowhere in the run folder (every
case's events.jsonl, transcript.md, grading.json, outputs/, ..., the skill's summary.md,
junit.xml, report.html, run.json), on the console, or in Prefect's database (artifacts,
logs, states)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

TOKEN = "dpl_live_7Kq2Vx9Lm4Rt8Wz3"
FORMS = {"plain": TOKEN, "base64": base64.b64encode(TOKEN.encode()).decode().rstrip("="),
         "hex": TOKEN.encode().hex()}

DEPLOY_MD = """---
name: deploy-notes
description: Write the release notes of a deployment, authenticated with DEPLOY_TOKEN.
---

# deploy-notes

Run `scripts/notes.sh` in the release folder; it needs `DEPLOY_TOKEN` in the environment.
"""
DEPLOY_SH = """#!/bin/sh
set -e
[ -n "$DEPLOY_TOKEN" ] || { echo "DEPLOY_TOKEN is not set" >&2; exit 2; }
mkdir -p outputs
echo "# Deployment notes" > outputs/notes.md
echo "authenticated: yes" >> outputs/notes.md
echo "notes written"
"""
DIGEST_MD = """---
name: release-digest
description: Summarise the CI variables of a release into a digest.
---

# release-digest

Run `scripts/digest.sh fixtures/ci-vars.env` to print the digest of the release variables.
"""
# prints every value it read: as is, base64-encoded and in hex; and keeps a copy as output
DIGEST_SH = """#!/bin/sh
vars="$1"
while IFS='=' read -r name value; do
  echo "$name=$value"
  printf %s "$value" | base64
  printf %s "$value" | od -An -tx1 | tr -d ' \\n'; echo
done < "$vars"
cp "$vars" digest.txt
# ... and notes the last variable in the skill's own SKILL.md (an edit of the skill: Δ)
echo "Last digest: $(tail -n 1 "$vars")" >> "$(dirname "$0")/../SKILL.md"
printenv DEPLOY_TOKEN || echo "DEPLOY_TOKEN is not in this environment"
"""


def marketplace(root: Path) -> Path:
    mp = root / "marketplace"
    deploy = mp / "skills" / "deploy-notes"
    (deploy / "scripts").mkdir(parents=True)
    (deploy / "SKILL.md").write_text(DEPLOY_MD)
    (deploy / "scripts" / "notes.sh").write_text(DEPLOY_SH)
    (deploy / "scripts" / "notes.sh").chmod(0o755)
    (deploy / "eval.config").write_text(json.dumps({"evals": [{
        "id": "notes", "prompt": "Write the deployment notes with the deploy-notes skill.",
        "expected_outcome": "outputs/notes.md is written.",
        "required_credentials": ["DEPLOY_TOKEN"],
        "steps": ["$SKILL_DIR/scripts/notes.sh"],
        "assertions": [{"type": "file_exists", "path": "outputs/notes.md"}]}]}))
    digest = mp / "skills" / "release-digest"
    (digest / "scripts").mkdir(parents=True)
    (digest / "fixtures").mkdir()
    (digest / "SKILL.md").write_text(DIGEST_MD)
    (digest / "scripts" / "digest.sh").write_text(DIGEST_SH)
    (digest / "scripts" / "digest.sh").chmod(0o755)
    (digest / "fixtures" / "ci-vars.env").write_text(f"RELEASE=2.4.1\nDEPLOY_TOKEN={TOKEN}\n")
    (digest / "eval.config").write_text(json.dumps({"evals": [{
        "id": "digest", "prompt": "Print the digest of fixtures/ci-vars.env.",
        "expected_outcome": "The digest lists every variable.",
        "files": ["fixtures/"],
        "steps": ["$SKILL_DIR/scripts/digest.sh fixtures/ci-vars.env"],
        "assertions": [
            {"type": "file_exists", "path": "digest.txt"},
            # fails, and its evidence is the command's output: the token in three forms
            {"type": "command", "run": "sh $SKILL_DIR/scripts/digest.sh fixtures/ci-vars.env"
                                       "; exit 1"}]}]}))
    return mp


def test_a_value_one_case_declares_is_redacted_from_every_case_of_the_run(tmp_path):
    mp = marketplace(tmp_path)
    home, store = tmp_path / "prefect-home", tmp_path / "store"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(DEPLOY_TOKEN=TOKEN, PREFECT_HOME=str(home), AEVAL_RETRIES="1",
               AEVAL_RETRY_DELAY_S="0.05", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               COLUMNS="200")
    exe = Path(sys.executable).parent / "aeval"
    r = subprocess.run([str(exe), "run", str(mp), "--out", str(store)], env=env,
                       capture_output=True, text=True, timeout=300)
    console = r.stdout + r.stderr
    assert r.returncode == 1, console[-3000:]  # release-digest's failing check
    (run_dir,) = (store / "runs").iterdir()
    # the run did what the test means: both skills ran, the digest printed what it read
    digest = next(run_dir.glob("release-digest/literal/digest"))
    assert (digest / "outputs" / "digest.txt").is_file()  # the output, copied
    assert "RELEASE=2.4.1" in (digest / "transcript.md").read_text()
    # redaction widened, the secret did not: the executor still gets only its own case's
    assert "DEPLOY_TOKEN is not in this environment" in (digest / "transcript.md").read_text()
    assert json.loads((run_dir / "deploy-notes" / "literal" / "notes" / "grading.json")
                      .read_text())["status"] == "pass"
    databases = list(home.rglob("*.db"))
    assert databases, f"no Prefect database under {home}"
    leaks = []
    for kind, form in FORMS.items():
        if form in console:
            leaks.append(("console", kind))
        for root in (run_dir, home):  # the run folder; Prefect's database (and its WAL)
            for p in sorted(root.rglob("*")):
                if p.is_file() and form.encode() in p.read_bytes():
                    leaks.append((str(p.relative_to(tmp_path)), kind))
    assert not leaks, "\n".join(f"{where}: {kind}" for where, kind in leaks)
    # ... and where it was, the evidence says what was there
    for seen in (digest / "transcript.md", digest / "outputs" / "digest.txt",
                 digest / "grading.json", digest / "skill.diff", run_dir / "junit.xml",
                 digest.parent / "fix_suggestions.json"):
        assert "[REDACTED:DEPLOY_TOKEN]" in seen.read_text(), seen
