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
  does one that does not exist. The cost is one bind per sibling (a marketplace's skills
  folder: one per skill); bubblewrap's cost grows quickly with the number of mounts (100
  binds ~0.15 s, 1,000 ~5 s per command, measured here), so only the parents of hidden paths
  are rebuilt, never whole trees.
- **Programs under /tmp** (a CI clone, its venv, the pinned agent CLIs) are bound read-only
  at their prefix, never /tmp itself nor a folder holding a private path (`tmp_prefixes`).
- **Pinned folders** (the skill copy) are bound at their own place: a bind mount's target
  cannot be renamed or removed from inside (EBUSY), so the copy cannot be moved aside while
  Δ watches its path. Only the copy itself is pinned, not every folder in it: one mount per
  folder would cost seconds per command on a big skill (above); folders inside are covered by
  the watch and by the manifest's file identities (`aeval.tree`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TMP = Path("/tmp")
# Mounted by bubblewrap itself: never bound back from the host when "/" is rebuilt.
_OWN_MOUNTS = frozenset({"proc", "dev", "tmp"})


def tmp_prefixes(argv: list[str], path: str, private: list[Path]) -> list[str]:
    """Install prefixes under /tmp that a sandboxed command needs, to bind read-only over the
    sandbox's private /tmp: aeval's own venv and interpreter, the folders of ``PATH``, and
    the programs ``argv`` names (an agent CLI in ``<clone>/.ci/node_modules``, a checkout
    under /tmp in CI). A program or ``bin`` folder gives its prefix (``.../node_modules`` of
    ``.../node_modules/bin/codex``). Never /tmp itself, nor a folder holding or inside a
    ``private`` path (the attempt, the hidden ones): those stay as the policy says."""
    private = [Path(x).resolve() for x in private]
    found: set[Path] = set()
    for c in [sys.prefix, sys.base_prefix, *path.split(os.pathsep),
              *(a for a in argv if a.startswith("/"))]:
        if not c.startswith("/"):
            continue
        for q in {Path(c).absolute(), Path(c).resolve()}:
            if not q.is_relative_to(TMP) or not q.exists():
                continue
            prefix = q if q.is_dir() else q.parent
            if prefix.name == "bin":
                prefix = prefix.parent
            if prefix == TMP or any(prefix.is_relative_to(x) or x.is_relative_to(prefix)
                                    for x in private):
                continue
            found.add(prefix)
    return sorted(str(f) for f in found if not any(f != g and f.is_relative_to(g)
                                                   for g in found))


def _needs_hiding(path: Path) -> bool:
    return path != Path("/") and not path.is_relative_to(TMP) and os.path.lexists(path)


def hide(hidden: list[Path]) -> tuple[list[str], list[str], bool]:
    """bubblewrap options that hide ``hidden`` without a mount point at any of them: the
    parent of each is rebuilt (shallowest first, so a deeper rebuild mounts over what a
    shallower one bound back).

    Returns (options, folders to remount read-only once every other bind is made, whether
    "/" itself is rebuilt: then the caller binds nothing at "/")."""
    targets = {Path(h).resolve() for h in hidden}
    targets = {h for h in targets if _needs_hiding(h)}
    parents = sorted({h.parent for h in targets}, key=lambda p: (len(p.parts), str(p)))
    opts: list[str] = []
    for folder in parents:
        root = folder == Path("/")
        if not root:
            opts += ["--tmpfs", str(folder)]
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            names = []
        for name in names:
            child = folder / name
            if child in targets or (root and name in _OWN_MOUNTS):
                continue
            if child.is_symlink():
                opts += ["--symlink", os.readlink(child), str(child)]
            else:
                opts += ["--ro-bind", str(child), str(child)]
    return opts, [str(p) for p in parents], Path("/") in parents
