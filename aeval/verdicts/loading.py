"""Which of the skill's own files a crash was loading: ``JSONDecodeError ... raised in the
skill's scripts/count.py:13`` says where the parser gave up, not what it read. The file is
named only on evidence, never guessed:

- the error names it (PyYAML: ``in "<skill>/config.yaml", line 3, column 5``); or
- a frame of the traceback in the skill's code names it: a string literal on the frame's line
  (``json.load(open(HERE / "config.json"))``), or on the line that assigns a name the frame's
  line uses (``CONFIG = HERE / "config.json"`` ... ``json.load(open(CONFIG))``), innermost
  frame first;

and in either case the file must be one the skill ships, with the format the exception
names (JSON, YAML, TOML), and must indeed fail to parse. Two such files: none named.
Reads only the skill's files, beneath its folder, never through a symlink.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path, PurePosixPath

import yaml

from aeval.isolation.tree import read_path
from aeval.verdicts.missing import shipped_files

MAX_BYTES = 2_000_000
# the exception's class name -> the format it failed to read
_FORMATS = {"JSONDecodeError": "JSON", "TOMLDecodeError": "TOML", "TomlDecodeError": "TOML",
            "ScannerError": "YAML", "ParserError": "YAML", "ComposerError": "YAML",
            "ConstructorError": "YAML", "ReaderError": "YAML", "YAMLError": "YAML"}
_SUFFIXES = {"JSON": (".json",), "YAML": (".yaml", ".yml"), "TOML": (".toml",)}
_QUOTED = re.compile(r'"([^"\n]{1,500})"|\'([^\'\n]{1,500})\'')
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def loaded_file(exc_line: str, output: str, skill_dir: Path,
                frames: list[tuple[str, int]]) -> tuple[str, str] | None:
    """The skill file (skill-relative) the crash ``exc_line`` was parsing, and its format;
    ``frames``: the traceback's frames in the skill (outermost first). None without proof."""
    fmt = _FORMATS.get(exc_line.split(":", 1)[0].split(".")[-1])
    if fmt is None:
        return None
    skill_dir = Path(skill_dir)
    files = [f for f in shipped_files(skill_dir) if f.endswith(_SUFFIXES[fmt])]
    if not files:
        return None
    named = [f for f in _named(output, skill_dir, files) if _broken(skill_dir, f, fmt)]
    if len(set(named)) == 1:
        return named[0], fmt
    for file, line in reversed(frames):
        candidates = _literal_candidates(skill_dir, file, line, files)
        if candidates:
            broken = [c for c in candidates if _broken(skill_dir, c, fmt)]
            return (broken[0], fmt) if len(broken) == 1 else None
    return None


def _named(output: str, skill_dir: Path, files: list[str]) -> list[str]:
    """The skill files of ``files`` the error text quotes by path (after the traceback)."""
    tail = output.rsplit("Traceback (most recent call last):", 1)[-1]
    tail = "\n".join(ln for ln in tail.splitlines() if not ln.lstrip().startswith("File "))
    root = skill_dir.resolve()
    out = []
    for m in _QUOTED.finditer(tail[-20_000:]):
        quoted = m.group(1) or m.group(2)
        p = Path(quoted)
        try:
            full = (p if p.is_absolute() else skill_dir / p).resolve()
        except (OSError, RuntimeError):
            continue
        if full.is_relative_to(root) and full.relative_to(root).as_posix() in files:
            out.append(full.relative_to(root).as_posix())
    return out


def _literal_candidates(skill_dir: Path, file: str, line: int, files: list[str]) -> list[str]:
    """The files of ``files`` a string literal of the frame's line names, or of a line that
    assigns a name the frame's line uses."""
    data = read_path(skill_dir / file, skill_dir, MAX_BYTES)
    if data is None:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    if not 1 <= line <= len(lines):
        return []
    src = [lines[line - 1]]
    for name in set(_NAME.findall(lines[line - 1])):
        assign = re.compile(rf"^\s*{re.escape(name)}\s*(?::[^=\n]+)?=(?!=)\s*(.+)$")
        src += [m.group(1) for ln in lines if (m := assign.match(ln))]
    found: list[str] = []
    for m in _QUOTED.finditer("\n".join(src)):
        literal = (m.group(1) or m.group(2)).strip()
        parts = [p for p in PurePosixPath(literal).parts if p not in (".", "..", "/")]
        if not parts or "{" in literal or "%" in literal:
            continue
        tail = "/".join(parts)
        found += [f for f in files if f == tail or f.endswith("/" + tail)]
    return list(dict.fromkeys(found))


def _broken(skill_dir: Path, rel: str, fmt: str) -> bool:
    """Whether the skill's ``rel`` fails to parse as ``fmt`` (as the script's parser would)."""
    data = read_path(skill_dir / rel, skill_dir, MAX_BYTES)
    if data is None:
        return False
    try:
        text = data.decode("utf-8")
        if fmt == "JSON":
            json.loads(text)
        elif fmt == "YAML":
            for _ in yaml.load_all(text, Loader=_YAML_LOADER):
                pass
        else:
            tomllib.loads(text)
    except (ValueError, yaml.YAMLError, RecursionError):  # JSON, TOML and UTF-8 errors too
        return True
    return False
