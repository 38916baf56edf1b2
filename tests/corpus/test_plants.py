"""The recall corpus holds what it claims, before aeval looks at it: the marketplaces of
loader.STYLES (the first three of at least ten skills each, issue 31's three of at least six)
and of loader.STYLES_45 (issues 45 and 49, at least six each), in the layouts they claim;
the unplanted corpus has no defect of the kinds planted (every link
resolves, every script with an interpreter line is executable and committed so, no CRLF);
every plant applies to a copy, and its `expect.line` is a line that names the cause; and a
planted block really breaks: run as a reader would (bash, from the skill folder, a private
/tmp, no network; the skill folder reachable under every spelling the reader's harness
gives it: `{baseDir}`, `$CLAUDE_SKILL_DIR`, `/mnt/skills/public/<name>/`, `$CLAUDE_PLUGIN_ROOT`;
a console session's commands with their `> ` continuations; a block running the checkout's
own `./bin/` tool from the checkout's root; STYLES_45's in a git checkout of the
marketplace, as a reader who cloned it has), it exits 0 on the corpus as committed and non-zero
once the plant is applied.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import get_args

import pytest

from tests.corpus.loader import (
    ALL_STYLES,
    MARKETPLACES,
    MIN_SKILLS,
    STYLES_45,
    Kind,
    Plant,
    PlantError,
    _git,
    apply_plant,
    build_marketplace,
    finding_matches,
    load_plants,
    marketplace_names,
    names_cause,
    skill_folders,
)

PLANTS = load_plants()
FENCE = re.compile(r"^( *)(`{3,}|~{3,})[ \t]*([\w-]*)[^\n]*\n(.*?)^\1\2[ \t]*$", re.M | re.S)
LINK = re.compile(r"\[[^\]\n]+\]\(([^)\s]+)\)")


def blocks(text: str) -> list[tuple[int, int, str, str]]:
    """Top-level fenced blocks of a Markdown text: (first body line, last body line, language,
    body with the fence's indentation removed). Lines are 1-based."""
    out = []
    for m in FENCE.finditer(text):
        first = text.count("\n", 0, m.start()) + 2
        body = m.group(4)
        ind = len(m.group(1))
        lines = [ln[ind:] if ln[:ind].strip() == "" else ln for ln in body.splitlines()]
        out.append((first, first + len(lines) - 1, m.group(3), "\n".join(lines)))
    return out


def prose(text: str) -> str:
    """``text`` with its fenced blocks blanked (line numbers kept)."""
    for m in FENCE.finditer(text):
        text = text[:m.start()] + re.sub(r"[^\n]", " ", m.group(0)) + text[m.end():]
    return text


def test_every_marketplace_claimed_is_there_with_its_least_number_of_skills():
    names = marketplace_names()
    assert names == sorted(ALL_STYLES), names
    for name in names:
        assert len(skill_folders(name)) >= MIN_SKILLS[name], (name, skill_folders(name))
    assert sorted(MIN_SKILLS.values()) == [6] * 7 + [10] * 3
    # the layouts aeval must discover: dot-folders, .claude/skills, plugins, a collection folder
    found = {s for n in names for s in skill_folders(n)}
    assert any(s.startswith("skills/.curated/") for s in found)
    assert any(s.startswith("skills/.system/") for s in found)
    assert any(s.startswith("skills/.experimental/") for s in found)
    assert any(s.startswith(".claude/skills/") for s in found)
    assert {s.split("/")[1] for s in skill_folders("sentinel")} >= {"sarif-tools", "crypto"}
    assert all(re.fullmatch(r"plugins/[\w-]+/skills/[\w-]+", s) for s in skill_folders("sentinel"))
    assert all(s.startswith("scientific-skills/") for s in skill_folders("lab-bench"))


def _text(name: str) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (MARKETPLACES / name).rglob("*.md"))


def test_the_marketplaces_use_the_skill_path_conventions_they_claim():
    sentinel, lab, launchpad = _text("sentinel"), _text("lab-bench"), _text("launchpad")
    assert "{baseDir}/scripts/" in sentinel and "${CLAUDE_SKILL_DIR}/scripts/" in sentinel
    assert "`scripts/merge_sarif.py --important`" in sentinel      # a script named in prose
    assert re.search(r"^semgrep ", sentinel, re.M) and re.search(r"^codeql ", sentinel, re.M)
    assert re.search(r"^uv run scripts/\w+\.py", lab, re.M)
    assert "Error: rdkit is not installed. Install with: pip install rdkit" in (
        MARKETPLACES / "lab-bench/scientific-skills/rdkit-descriptors/scripts/descriptors.py"
    ).read_text(encoding="utf-8")
    assert "python scripts/script_name.py --help" in lab
    assert re.search(r"^```\n[\w-]+/\n├── ", lab, re.M)           # a layout tree, no language
    assert "/mnt/skills/public/" in launchpad
    assert "npm install -g pnpm; pnpm --version" in launchpad
    assert re.search(r"^\$ .*\\\n>  ", launchpad, re.M)            # `$ ` and `> ` lines
    assert "No package.json found. Run this script from your project root." in (
        MARKETPLACES / "launchpad/skills/web-artifacts-builder/scripts/bundle-artifact.sh"
    ).read_text(encoding="utf-8")
    for name in ("sentinel", "lab-bench", "launchpad"):
        for folder in skill_folders(name):
            skill = MARKETPLACES / name / folder
            assert (skill / "eval.config").is_file(), f"{name}/{folder}: no eval.config"
            assert any((skill / "scripts").glob("*")), f"{name}/{folder}: no scripts"


def test_at_least_fifty_plants_spread_over_marketplaces_and_kinds():
    assert len(PLANTS) >= 50
    per_mp = Counter(p.marketplace for p in PLANTS)
    assert set(per_mp) == set(marketplace_names()), per_mp
    for name, count in per_mp.items():
        assert count >= (8 if MIN_SKILLS[name] == 10 else 5), per_mp
    assert set(get_args(Kind)) == {p.kind for p in PLANTS}, "a kind without a plant"
    assert sum(p.after_skipped for p in PLANTS) >= 5
    assert sum(p.after_skipped for p in PLANTS if MIN_SKILLS[p.marketplace] == 6) >= 5
    for p in PLANTS:
        assert p.skill in skill_folders(p.marketplace), p.id


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.id)
def test_expected_lines_name_the_cause(plant: Plant):
    path = MARKETPLACES / plant.marketplace / plant.skill / plant.expect.file
    lines = path.read_text(encoding="utf-8").splitlines()
    for n in plant.expect.lines:
        assert n <= len(lines), f"{plant.id}: {plant.expect.file} has {len(lines)} lines"
        assert names_cause(lines[n - 1], plant.expect.cause), \
            f"{plant.id}: {plant.expect.file}:{n} does not name {plant.expect.cause!r}: " \
            f"{lines[n - 1]!r}"


def _copy(plant: Plant, dest: Path) -> Path:
    shutil.copytree(MARKETPLACES / plant.marketplace, dest, symlinks=True)
    return dest


def _files(root: Path) -> dict[str, tuple[int, bytes]]:
    return {p.relative_to(root).as_posix(): (p.stat().st_mode, p.read_bytes())
            for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.id)
def test_plant_applies_to_a_copy_and_changes_only_its_skill(plant: Plant, tmp_path):
    before = _files(MARKETPLACES / plant.marketplace)
    after_root = _copy(plant, tmp_path / "after")
    apply_plant(plant, after_root)
    after = _files(after_root)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed, f"{plant.id} changed nothing"
    assert all(k.startswith(plant.skill + "/") for k in changed), changed
    # the committed corpus is never touched
    assert _files(MARKETPLACES / plant.marketplace) == before


def test_a_plant_that_no_longer_applies_says_which_edit(tmp_path):
    plant = PLANTS[0].model_copy(deep=True)
    edit = next(e for e in plant.edits if e.op == "replace")
    edit.old = "text that is not in the script"
    with pytest.raises(PlantError, match=rf"{plant.id} edit \d \(replace\).*0 time\(s\)"):
        apply_plant(plant, _copy(plant, tmp_path / "mp"))


def _corpus_files() -> list[Path]:
    return sorted(p for p in MARKETPLACES.rglob("*") if p.is_file())


def test_every_link_of_the_unplanted_corpus_resolves():
    broken = []
    for md in (p for p in _corpus_files() if p.suffix == ".md"):
        for n, line in enumerate(prose(md.read_text(encoding="utf-8")).splitlines(), 1):
            for target in LINK.findall(line):
                target = target.split("#", 1)[0]
                if not target or re.match(r"[a-z]+:", target):
                    continue
                if not (md.parent / target).exists():
                    broken.append(f"{md.relative_to(MARKETPLACES)}:{n}: {target}")
    assert not broken, broken


def test_scripts_with_an_interpreter_line_are_executable_and_committed_so():
    not_exec, no_crlf = [], []
    for f in _corpus_files():
        data = f.read_bytes()
        if b"\r\n" in data:
            no_crlf.append(str(f))
        if data.startswith(b"#!") and not os.access(f, os.X_OK):
            not_exec.append(str(f))
    assert not not_exec, not_exec
    assert not no_crlf, no_crlf
    git = shutil.which("git")
    inside = git and subprocess.run([git, "rev-parse"], cwd=MARKETPLACES,
                                    capture_output=True).returncode == 0
    if not inside:
        pytest.skip("not a git checkout: the committed modes cannot be read")
    listed = subprocess.run([git, "ls-files", "-s", "--", "."], cwd=MARKETPLACES,
                            capture_output=True, text=True, check=True).stdout
    modes = {line.split("\t", 1)[1]: line.split()[0] for line in listed.splitlines()}
    if not modes:
        pytest.skip("the corpus is not committed yet")
    wrong = [path for path, mode in modes.items()
             if (MARKETPLACES / path).read_bytes().startswith(b"#!") and mode != "100755"]
    assert not wrong, f"committed without the executable bit: {wrong}"


# ---- a planted block really breaks -----------------------------------------------------------

BWRAP = shutil.which("bwrap")


INSTALL = re.compile(r"\b(?:pip3?|npm|pnpm|yarn|apt-get|apt|brew|conda|cargo|gem)\s+"
                     r"(?:-\S+\s+)*(?:install|add|i)\b")


def console_commands(body: str) -> str:
    """A console session's commands as a reader types them: the ``$ `` lines with their
    ``> `` continuation lines, output lines left out."""
    out, going = [], False
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append(line[2:])
            going = True
        elif going and (line.startswith("> ") or line == ">"):
            out.append(line[2:])
        else:
            going = False
    return "\n".join(out)


def _planted_block(plant: Plant) -> tuple[list[str], str] | None:
    """The shell blocks of ``expect.file`` before the one holding ``expect.line`` (install
    blocks left out), and that block; None when the line is prose (a link, an inline span).
    A console session counts by its commands."""
    path = MARKETPLACES / plant.marketplace / plant.skill / plant.expect.file
    shell = [b if b[2] != "console" else (*b[:3], console_commands(b[3]))
             for b in blocks(path.read_text(encoding="utf-8"))
             if b[2] in ("bash", "sh", "shell", "console")]
    for i, (first, last, _lang, body) in enumerate(shell):
        if first <= plant.expect.line <= last:
            return [b[3] for b in shell[:i] if not INSTALL.search(b[3])], body
    return None


def _skill_name(skill_dir: Path) -> str:
    m = re.search(r"^name:\s*(\S+)", (skill_dir / "SKILL.md").read_text(encoding="utf-8"), re.M)
    return m.group(1) if m else skill_dir.name


TOOL = re.compile(r"(?<![\w./-])\./bin/([\w.-]+)")


def _cwd(skill_dir: Path, root: Path | None, body: str) -> Path:
    """Where a reader runs ``body``: the skill folder, or the checkout's root when the block
    runs the checkout's own ``./bin/<tool>`` (which the skill does not ship)."""
    tools = TOOL.findall(body)
    if root is not None and tools and all(
            not (skill_dir / "bin" / t).exists() and (root / "bin" / t).is_file() for t in tools):
        return root
    return skill_dir


def _uv() -> str | None:
    """uv as a reader has it: on PATH, else the binary of aeval's own uv dependency (the
    one aeval puts into a case's toolchain), which CI's PATH does not hold."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin
    except ImportError:
        return None
    return find_uv_bin()


UV = _uv()


def _inline_dependencies(plant: Plant, code: str) -> str | None:
    """The PEP 723 ``dependencies`` of the script a ``uv run`` in ``code`` runs, when it
    declares any (the marketplace's own file: plants never touch the header)."""
    m = re.search(r"\buv run\s+(?:--\S+\s+)*(\S+\.py)\b", code)
    if not m:
        return None
    script = MARKETPLACES / plant.marketplace / plant.skill / m.group(1)
    if not script.is_file():
        return None
    block = re.search(r"(?ms)^# /// script\s*$(.*?)^# ///\s*$", script.read_text())
    deps = re.search(r"dependencies\s*=\s*\[(.*?)\]", block.group(1), re.S) if block else None
    names = re.findall(r"[\"']([^\"']+)[\"']", deps.group(1)) if deps else []
    return ", ".join(names) or None


def _run_as_reader(skill_dir: Path, prelude: list[str], code: str,
                   keep: Path, root: Path | None = None) -> subprocess.CompletedProcess:
    """The blocks of ``prelude`` (their failures ignored), then ``code``, each run by bash
    from ``skill_dir`` as a reader would, in one session: a read-only host, a private /tmp
    and HOME, no network (bubblewrap); only ``keep``, which holds the skill, is writable.
    The skill folder is where the reader's harness puts it: ``{baseDir}`` written out (as
    Claude Code does), ``CLAUDE_SKILL_DIR`` set, and the folder mounted at claude.ai's
    ``/mnt/skills/public/<name>/`` and ``/mnt/skills/user/<name>/``; in a plugin
    (``<plugin>/skills/<name>/``) ``CLAUDE_PLUGIN_ROOT`` is the plugin's folder. ``root``: the
    marketplace checkout, whose ``./bin/`` tools a block may run from its root."""
    home, scripts = keep / "home", keep / "blocks"
    home.mkdir(exist_ok=True)
    scripts.mkdir(exist_ok=True)
    steps = []
    for i, body in enumerate([*prelude, code]):
        body = body.replace("{baseDir}", str(skill_dir))
        (scripts / f"{i:02d}.sh").write_text(body + "\n", encoding="utf-8")
        steps.append(f'(cd "{_cwd(skill_dir, root, body)}" && bash {scripts}/{i:02d}.sh)')
    session = "\n".join(f"{s} >/dev/null 2>&1" for s in steps[:-1]) + "\n" + steps[-1] + "\n"
    name = _skill_name(skill_dir)
    cmd = [BWRAP, "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
           "--bind", str(keep), str(keep), "--tmpfs", "/mnt",
           # aeval's own uv stays visible when its venv is under /tmp (a clone there)
           *(["--ro-bind", str(Path(UV).parent), str(Path(UV).parent)] if UV else []),
           "--bind", str(skill_dir), f"/mnt/skills/public/{name}",
           "--bind", str(skill_dir), f"/mnt/skills/user/{name}",
           "--unshare-pid", "--unshare-net", "--die-with-parent", "--chdir", str(skill_dir),
           "bash", "-c", session]
    path = os.environ.get("PATH", "/usr/bin:/bin")
    env = {"PATH": f"{Path(UV).parent}:{path}" if UV else path, "HOME": str(home),
           "TMPDIR": "/tmp", "LANG": "C.UTF-8", "SKILL_DIR": str(skill_dir),
           "CLAUDE_SKILL_DIR": str(skill_dir),
           **({"CLAUDE_PLUGIN_ROOT": str(skill_dir.parent.parent)}
              if skill_dir.parent.name == "skills" else {}),
           # no network in here: npm fails at once instead of retrying its fetches for a
           # minute (a prelude's `npm exec` of the reader's tool, ignored anyway)
           "npm_config_offline": "true", "npm_config_fetch_retries": "0"}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


RUN_PLANTS = [p for p in PLANTS if _planted_block(p) is not None]


def _checkout(plant: Plant, dest: Path) -> Path:
    """A copy of the plant's marketplace as its reader has it: STYLES_45's as a git checkout
    (their release skill reads the history of the repository it is run in)."""
    _copy(plant, dest)
    if plant.marketplace in STYLES_45:
        _git(dest, "init", "-q", "-b", "main")
        _git(dest, "add", "-A")
        _git(dest, "commit", "-q", "-m", "feat: the marketplace as cloned")
    return dest


def test_most_plants_are_in_runnable_blocks():
    links = {"missing_reference", "missing_nested_reference", "unshipped_sibling",
             "unshipped_guide"}
    assert {p.id for p in PLANTS if p.kind not in links} <= {p.id for p in RUN_PLANTS}


@pytest.mark.integration
@pytest.mark.skipif(BWRAP is None, reason="bubblewrap (bwrap) is not installed")
@pytest.mark.parametrize("plant", RUN_PLANTS, ids=lambda p: p.id)
def test_planted_block_works_unplanted_and_breaks_planted(plant: Plant, tmp_path):
    found = _planted_block(plant)
    assert found is not None
    prelude, code = found
    where = f"{plant.id} {plant.skill}/{plant.expect.file}:{plant.expect.line}"
    if re.search(r"\buv run\b", code) and UV is None:
        pytest.skip(f"{where} runs `uv run`: uv is not installed here")
    if (needs := _inline_dependencies(plant, code)):
        pytest.skip(f"{where} runs `uv run` on a script that declares {needs}: uv fetches "
                    "them from the registry, and the reader's sandbox here has no network")
    if re.search(r"\b(?:npx|bunx)\b", code):
        pytest.skip(f"{where} runs a tool through npx/bunx: it needs the network")
    before = _checkout(plant, tmp_path / "before" / plant.marketplace)
    r = _run_as_reader(before / plant.skill, prelude, code, tmp_path / "before", before)
    assert r.returncode == 0, f"{where} fails unplanted ({r.returncode}): {r.stdout}{r.stderr}"
    after = _checkout(plant, tmp_path / "after" / plant.marketplace)
    apply_plant(plant, after)
    r = _run_as_reader(after / plant.skill, prelude, code, tmp_path / "after", after)
    assert r.returncode != 0, f"{where} still works planted: {r.stdout}{r.stderr}"


@pytest.mark.parametrize("plant", [p for p in PLANTS if p not in RUN_PLANTS],
                         ids=lambda p: p.id)
def test_planted_link_resolves_unplanted_and_breaks_planted(plant: Plant, tmp_path):
    rel = PurePosixPath(plant.expect.file).parent / plant.expect.cause
    before = _copy(plant, tmp_path / "before")
    assert (before / plant.skill / rel).is_file(), f"{plant.id}: {rel} missing unplanted"
    after = _copy(plant, tmp_path / "after")
    apply_plant(plant, after)
    assert not (after / plant.skill / rel).exists(), f"{plant.id}: {rel} still there"


def test_build_marketplace_commits_the_corpus_then_the_plants(tmp_path):
    plants = [p for p in PLANTS if p.marketplace == "codex-kit"][:2]
    root = build_marketplace("codex-kit", tmp_path / "mp", plants)
    log = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == [f"plant {plants[0].id}, {plants[1].id}", "codex-kit: the corpus as committed"]
    assert sorted(skill_folders(root)) == skill_folders("codex-kit")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    assert status == ""


@pytest.mark.parametrize(("evidence", "line_ok", "cause_ok"), [
    ("SKILL.md line 54: the skill's stats.py rejects what SKILL.md documents: argument "
     "command: invalid choice: 'mean'", True, True),
    ("SKILL.md:54 `python3 scripts/stats.py mean ...` exited 2", True, True),
    ("SKILL.md line 53: ... invalid choice: 'mean'", False, True),     # the fence, not the line
    ("SKILL.md line 54: exited 2; the mean could not be computed", True, True),
    ("SKILL.md line 54: exited 2; meaning unclear", True, False),      # 'mean' is not 'meaning'
    ("doc test: line 540 of SKILL.md", False, False),
])
def test_finding_matches_reads_line_and_cause(evidence, line_ok, cause_ok):
    plant = next(p for p in PLANTS if p.id == "P01")
    assert plant.expect.line == 54 and plant.expect.cause == "mean"
    assert finding_matches(evidence, plant) == (line_ok, cause_ok)


def test_a_reference_file_line_counts_only_with_the_file_named():
    plant = next(p for p in PLANTS if p.expect.file != "SKILL.md")
    n = plant.expect.line
    name = PurePosixPath(plant.expect.file).name
    assert finding_matches(f"line {n}: {plant.expect.cause} is missing", plant)[0] is False
    assert finding_matches(f"{name} line {n}: {plant.expect.cause} is missing", plant) \
        == (True, True)
    assert finding_matches(f"{plant.expect.file}:{n}: {plant.expect.cause}", plant)[0] is True
