"""Issues 45 and 49's marketplaces (loader.STYLES_45) are written in the styles they claim,
and their context-aware scripts refuse the wrong context with their own message and work
in the right one, as their readers will see:

- forge-kit: `gh pr view` and `gh api` blocks, `uv run` scripts with PEP 723 headers
  (`requires-python`, small pure-Python dependencies), a release script run with no
  argument that needs the reader's git checkout, a helper that needs the reader's token;
- ops-desk: scripts called through the marketplace's path helper (`./bin/mp-path`) and
  `${CLAUDE_PLUGIN_ROOT}`, bash and Python, a skill setting its own `SKILL_DIR`, prose that
  abbreviates a script the fenced blocks run with `python` (no exec bit, no interpreter line);
- reelhouse: a bundled executable CLI (`bin/mediactl`), JS/TS helpers whose local imports
  resolve, a package.json, npx/bunx tools, references with `<site-root>/<slug>/`
  placeholders, an audit that needs the reader's package.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.corpus.loader import (
    MARKETPLACES,
    STYLES_45,
    _git,
    load_plants,
    skill_folders,
)

FORGE, OPS, REEL = (MARKETPLACES / n for n in ("forge-kit", "ops-desk", "reelhouse"))


def _md(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md")))


def test_the_new_marketplaces_hold_six_skills_or_more_and_five_plants_or_more():
    plants = load_plants()
    for name in STYLES_45:
        assert len(skill_folders(name)) >= 6, name
        assert sum(p.marketplace == name for p in plants) >= 5, name


def test_forge_kit_drives_gh_and_uv_run_with_pep_723_headers():
    text = _md(FORGE)
    assert re.search(r"^gh pr view ", text, re.M) and re.search(r"^gh api ", text, re.M)
    assert re.search(r"^uv run scripts/\w+\.py", text, re.M)
    headers = [p for p in FORGE.rglob("*.py")
               if "# /// script" in p.read_text(encoding="utf-8")]
    assert len(headers) >= 3
    deps = [p for p in headers
            if re.search(r'^#\s+"[\w-]+>=', p.read_text(encoding="utf-8"), re.M)]
    assert deps, "no PEP 723 header names a dependency"
    assert all('requires-python = ">=3.' in p.read_text(encoding="utf-8") for p in headers)


def test_ops_desk_calls_its_scripts_through_the_path_helper_and_the_plugin_root():
    helper = OPS / "bin" / "mp-path"
    assert os.access(helper, os.X_OK)
    out = subprocess.run([str(helper), "quant"], capture_output=True, text=True, check=True)
    assert Path(out.stdout.strip()) == (OPS / "plugins" / "quant").resolve()
    refused = subprocess.run([str(helper), "nosuch"], capture_output=True, text=True)
    assert refused.returncode == 1 and "no plugin named 'nosuch'" in refused.stderr
    text = _md(OPS)
    assert '"$(./bin/mp-path devops)/skills/' in text
    assert '"${CLAUDE_PLUGIN_ROOT}/skills/' in text
    assert 'SKILL_DIR="${CLAUDE_PLUGIN_ROOT}/skills/log-triage/scripts"' in text
    assert any(OPS.rglob("*.sh")) and any(OPS.rglob("*.py"))
    assert all(re.fullmatch(r"plugins/(devops|quant)/skills/[\w-]+", s)
               for s in skill_folders("ops-desk"))


def test_a_prose_shorthand_names_a_script_the_blocks_run_through_python():
    skill = OPS / "plugins/quant/skills/make-report"
    script = skill / "scripts/make_report.py"
    assert not os.access(script, os.X_OK)
    assert not script.read_text(encoding="utf-8").startswith("#!")
    text = (skill / "SKILL.md").read_text(encoding="utf-8")
    assert "Use `scripts/make_report.py monthly`" in text
    assert re.search(r"^python scripts/make_report.py monthly ", text, re.M)


def test_reelhouse_ships_its_cli_and_its_local_imports_resolve():
    assert os.access(REEL / "skills/media-pipeline/bin/mediactl", os.X_OK)
    pkg = json.loads((REEL / "package.json").read_text(encoding="utf-8"))
    assert pkg["devDependencies"]
    text = _md(REEL)
    assert re.search(r"^npx tsx ", text, re.M) and "bunx" in text
    assert re.search(r"^cp templates/[\w.]+ <site-root>/episodes/<slug>/", text, re.M)
    imports = re.compile(r"""^import .* from "(\.{1,2}/[^"]+)";""", re.M)
    found = 0
    for src in [*REEL.rglob("*.mjs"), *REEL.rglob("*.ts")]:
        for spec in imports.findall(src.read_text(encoding="utf-8")):
            target = src.parent / spec
            assert target.is_file() or target.with_suffix(".ts").is_file(), f"{src}: {spec}"
            found += 1
    assert found >= 4


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    return node


def test_the_release_script_refuses_outside_a_checkout_and_drafts_inside_one(tmp_path):
    skill = tmp_path / "forge-kit" / "skills" / "release-notes"
    shutil.copytree(FORGE, tmp_path / "forge-kit")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    run = ["python3", "scripts/release_notes.py"]
    outside = subprocess.run(run, cwd=skill, env=env, capture_output=True, text=True)
    assert outside.returncode == 1
    assert "not inside a git repository" in outside.stderr
    _git(tmp_path / "forge-kit", "init", "-q", "-b", "main")
    _git(tmp_path / "forge-kit", "add", "-A")
    _git(tmp_path / "forge-kit", "commit", "-q", "-m", "feat(notes)!: group by type")
    inside = subprocess.run([*run, "--max", "20"], cwd=skill, env=env, capture_output=True,
                            text=True)
    assert inside.returncode == 0, inside.stderr
    assert "### Breaking changes" in inside.stdout and "group by type" in inside.stdout


def test_the_token_helper_refuses_without_a_token_with_its_own_message():
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
    r = subprocess.run(["python3", "scripts/token_scopes.py"], env=env, capture_output=True,
                       text=True, cwd=FORGE / "skills/token-audit")
    assert r.returncode == 1 and "GITHUB_TOKEN is not set" in r.stderr


def test_the_asset_audit_needs_the_readers_package_json_and_audits_with_one(tmp_path):
    node = _node()
    script = REEL / "skills/asset-audit/scripts/audit_assets.mjs"
    r = subprocess.run([node, str(script)], cwd=script.parent.parent, capture_output=True,
                       text=True)
    assert r.returncode == 1 and "no package.json in" in r.stderr
    site = tmp_path / "site"
    (site / "public" / "img").mkdir(parents=True)
    (site / "package.json").write_text('{"name": "site"}', encoding="utf-8")
    (site / "public" / "img" / "hero.webp").write_bytes(b"\0" * 2048)
    (site / "public" / "img" / "old.png").write_bytes(b"\0" * 1024)
    (site / "index.html").write_text('<img src="/img/hero.webp"><img src="/img/gone.png">',
                                     encoding="utf-8")
    r = subprocess.run([node, str(script)], cwd=site, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "unreferenced  public/img/old.png" in r.stdout
    assert "missing       img/gone.png" in r.stdout
