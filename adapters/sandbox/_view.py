"""The file system a bubblewrap sandbox sees: what is bound, what is hidden, and how.

The host is bound read-only at ``/``, with a fresh ``/proc``, a minimal ``/dev`` and a private
``/tmp``; the attempt root is bound writable at its own path (every path aeval hands out stays
valid inside). Three rules shape the rest:

- **Hidden paths are never mount points.** A process inside reads ``/proc/self/mountinfo``,
  which lists every mount point and its source. Covering the original skill or the run store
  with an empty tmpfs (as before) wrote their paths into that list. Instead, the *parent* of a
  hidden path is rebuilt: an empty tmpfs, each sibling bound back read-only (symlinks made
  again as symlinks), then made read-only. The hidden entry is simply absent, and no mount
  names it. A hidden path under ``/tmp`` needs nothing (the sandbox's /tmp is empty), nor
  does one that does not exist.
- **Rebuilding stays cheap by hiding more.** A bind per sibling, and bubblewrap's cost grows
  with the square of the number of mounts (measured here: 100 binds ~0.15 s, 300 ~1 s, 600
  ~3.5 s per command, `--bind` or `--ro-bind` alike). A marketplace's skills folder holds
  hundreds of skills, so a hidden path whose parent has more than `MAX_SIBLINGS` entries is
  widened to that parent (then its parent, and so on): the whole skills folder disappears,
  not just the one skill, and each rebuilt folder costs at most `MAX_SIBLINGS` binds. What a
  command needs from a widened area (aeval's venv, the folders of PATH, the program it
  starts: an agent CLI in ``<checkout>/.ci/node_modules``) is bound back read-only at its
  prefix, unless that prefix holds or lies in a private path.
- **Programs under /tmp** (a CI clone, its venv, the pinned agent CLIs) are bound read-only
  at their prefix the same way, never /tmp itself nor a folder holding a private path
  (`needed_prefixes`).
- **Pinned folders** (the skill copy) are bound at their own place: a bind mount's target
  cannot be renamed or removed from inside (EBUSY), so the copy cannot be moved aside while
  Δ watches its path. Only the copy itself is pinned, not every folder in it: one mount per
  folder would cost seconds per command on a big skill (above); folders inside are covered by
  the watch and by the manifest's file identities (`aeval.isolation.tree`).

Measured with ``benchmarks/boundary_cost.py`` (1,000-file skill, 2 loaded cores): one
sandboxed ``true`` 47-68 ms bare or with the copy pinned, 75-77 ms with the original hidden
among 1, 60 or 300 sibling skills (the last two widened to the skills folder).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

TMP = Path("/tmp")
# Mounted by bubblewrap itself: never bound back from the host when "/" is rebuilt.
_OWN_MOUNTS = frozenset({"proc", "dev", "tmp"})


MAX_SIBLINGS = 16  # entries of a folder rebuilt to hide one of them (see above)


def needed_prefixes(argv: list[str], path: str, private: list[Path],
                    areas: Sequence[Path] = (TMP,)) -> list[str]:
    """Install prefixes inside ``areas`` (the sandbox's private /tmp, the widened hidden
    folders) that a sandboxed command needs, to bind read-only there: aeval's own venv and
    interpreter, the folders of ``PATH``, and the programs ``argv`` names. A program or
    ``bin`` folder gives its prefix (``.../node_modules`` of ``.../node_modules/bin/codex``).
    Never an area itself, nor a folder holding or inside a ``private`` path (the attempt,
    the hidden ones): those stay as the policy says."""
    private = [Path(x).resolve() for x in private]
    areas = [Path(a) for a in areas]
    found: set[Path] = set()
    for c in [sys.prefix, sys.base_prefix, *path.split(os.pathsep),
              *(a for a in argv if a.startswith("/"))]:
        if not c.startswith("/"):
            continue
        for q in {Path(c).absolute(), Path(c).resolve()}:
            if not any(q.is_relative_to(a) for a in areas) or not q.exists():
                continue
            prefix = q if q.is_dir() else q.parent
            if prefix.name == "bin":
                prefix = prefix.parent
            if prefix in areas or any(prefix.is_relative_to(x) or x.is_relative_to(prefix)
                                      for x in private):
                continue
            found.add(prefix)
    return sorted(str(f) for f in found if not any(f != g and f.is_relative_to(g)
                                                   for g in found))


def tmp_prefixes(argv: list[str], path: str, private: list[Path]) -> list[str]:
    """`needed_prefixes` under /tmp."""
    return needed_prefixes(argv, path, private, [TMP])


def _needs_hiding(path: Path) -> bool:
    return path != Path("/") and not path.is_relative_to(TMP) and os.path.lexists(path)


def _entries(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def widened(hidden: list[Path], max_siblings: int = MAX_SIBLINGS) -> list[Path]:
    """The folders actually hidden: each hidden path, or the ancestor it widens to while its
    parent has more than ``max_siblings`` entries; none inside another."""
    out = set()
    for h in {Path(h).resolve() for h in hidden}:
        if not _needs_hiding(h):
            continue
        while h.parent != Path("/") and len(_entries(h.parent)) > max_siblings:
            h = h.parent
        out.add(h)
    return sorted(h for h in out if not any(h != o and h.is_relative_to(o) for o in out))


def hide(targets: list[Path]) -> tuple[list[str], list[str], bool]:
    """bubblewrap options that hide ``targets`` (`widened` folders) without a mount point at
    any of them: the parent of each is rebuilt (shallowest first, so a deeper rebuild mounts
    over what a shallower one bound back).

    Returns (options, folders to remount read-only once every other bind is made, whether
    "/" itself is rebuilt: then the caller binds nothing at "/")."""
    targets = set(targets)
    parents = sorted({h.parent for h in targets}, key=lambda p: (len(p.parts), str(p)))
    opts: list[str] = []
    for folder in parents:
        root = folder == Path("/")
        if not root:
            opts += ["--tmpfs", str(folder)]
        for name in _entries(folder):
            child = folder / name
            if child in targets or (root and name in _OWN_MOUNTS):
                continue
            if child.is_symlink():
                opts += ["--symlink", os.readlink(child), str(child)]
            else:
                opts += ["--ro-bind", str(child), str(child)]
    return opts, [str(p) for p in parents], Path("/") in parents
