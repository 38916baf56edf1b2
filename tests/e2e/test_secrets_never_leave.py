"""A declared secret printed by a failing preflight, plainly and encoded, reaches neither the
console, nor any artifact, nor Prefect's database."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SECRET = "hf_canary_9Zq7Lw2Xv4Pp"
FORMS = [SECRET, base64.b64encode(SECRET.encode()).decode().rstrip("="), SECRET.encode().hex(),
         SECRET[::-1]]


def test_a_secret_in_failing_preflight_output_leaks_nowhere(tmp_path):
    skill = tmp_path / "mp" / "hub-upload"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hub-upload\ndescription: Uploads a model card "
                                    "to the hub.\n---\n# Hub upload\n")
    (skill / "eval.config").write_text(json.dumps({"evals": [{
        "id": "upload", "prompt": "Upload the card.", "expected_outcome": "Uploaded.",
        "required_credentials": ["HF_TOKEN"],
        "preflight": ['echo "checking token $HF_TOKEN"; echo "$HF_TOKEN" | base64; '
                      'printf %s "$HF_TOKEN" | od -An -tx1 | tr -d " \\n"; echo; '
                      'echo "$HF_TOKEN" | rev; exit 1'],
        "steps": ["true"], "assertions": [{"type": "file_exists", "path": "card.md"}]}]}))
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(HF_TOKEN=SECRET, PREFECT_HOME=str(home), AEVAL_RETRIES="1",
               AEVAL_RETRY_DELAY_S="0.05", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    exe = Path(sys.executable).parent / "aeval"
    r = subprocess.run([str(exe), "run", str(skill), "--out", str(tmp_path / "store")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stdout[-2000:] + r.stderr[-2000:]  # preflight: environment
    assert "preflight" in r.stdout + r.stderr
    leaks = []
    for form in FORMS:
        if form in r.stdout or form in r.stderr:
            leaks.append(("console", form))
        for root in (home, tmp_path / "store"):
            for p in root.rglob("*"):
                if p.is_file() and form.encode() in p.read_bytes():
                    leaks.append((str(p), form))
    assert not leaks, leaks
    # ... and the evidence still says what happened
    (grading,) = (tmp_path / "store").rglob("grading.json")
    g = json.loads(grading.read_text())
    assert g["status"] == "error" and "preflight command failed" in g["status_reason"]
