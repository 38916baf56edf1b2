"""Where every file of a run goes: one definition, used everywhere.

    <store>/runs/<run-id>/                                    RunLayout.run_dir
        run.json  junit.xml  report.html
        <skill-key>/<runtime>/                                 .skill_dir(key, runtime)
            benchmark.json fix_suggestions.json ...
            <case-id>[/epoch-N]/                               .case_dir(key, runtime, case, epoch)
                grading.json  events.jsonl ...
                attempts/<n>/                                  .attempt_dir(case_dir, n)

``<skill-key>`` is the skill's name made path-safe, or, when two skills of a run share a name,
the name plus a short hash of the skill's folder (both are kept). Paths inside a run are also
stored relative to the run folder (``CaseResult.dir``), so a run can be moved or posted from
another checkout.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe(name: str) -> str:
    """A path- and key-safe form of a name: never empty, never `.` or `..`."""
    out = _UNSAFE.sub("-", name).strip("-.") or "unnamed"
    return out[:100]


def skill_keys(skills: list[tuple[str, Path]]) -> dict[Path, str]:
    """A unique run-folder key per skill (``(name, folder)`` pairs): the safe name, or, for
    names two folders share, the safe name plus a hash of the folder (stable across runs, so
    `--resume` finds the same folders)."""
    by_key: dict[str, list[Path]] = {}
    for name, root in skills:
        by_key.setdefault(safe(name), []).append(Path(root))
    out: dict[Path, str] = {}
    for key, roots in by_key.items():
        for root in roots:
            out[root] = key if len(roots) == 1 else (
                f"{key}-{hashlib.sha256(str(root).encode()).hexdigest()[:8]}")
    return out


def case_rel(skill_key: str, runtime: str, case_id: str, epoch: int | None = None) -> str:
    """A case folder, relative to the run folder (what ``CaseResult.dir`` holds)."""
    d = f"{skill_key}/{safe(runtime)}/{safe(case_id)}"
    return d if epoch is None else f"{d}/epoch-{epoch}"


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run."""

    run_dir: Path

    @classmethod
    def of(cls, store: Path | str, run_id: str) -> RunLayout:
        return cls(Path(store) / "runs" / run_id)

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def store(self) -> Path:
        """The store root (``<store>/runs/<run-id>`` -> ``<store>``)."""
        return self.run_dir.parent.parent

    @property
    def manifest(self) -> Path:
        return self.run_dir / "run.json"

    def skill_dir(self, skill_key: str, runtime: str) -> Path:
        """Folder of the per skill x runtime artifacts."""
        return self.run_dir / skill_key / safe(runtime)

    def case_dir(self, skill_key: str, runtime: str, case_id: str,
                 epoch: int | None = None) -> Path:
        return self.run_dir / case_rel(skill_key, runtime, case_id, epoch)

    def case(self, rel: str) -> Path:
        """A case folder from its run-relative path (``CaseResult.dir``)."""
        return self.run_dir / rel

    @staticmethod
    def attempts_dir(case_dir: Path) -> Path:
        return case_dir / "attempts"

    @staticmethod
    def attempt_dir(case_dir: Path, number: int) -> Path:
        return case_dir / "attempts" / str(number)
