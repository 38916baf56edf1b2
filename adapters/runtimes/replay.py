"""`replay`: re-emits a recorded run instead of running anything, for re-grading and tests.

It reads ``<recording>/events.jsonl``, restores the recorded outputs into the workspace and
re-applies the recorded skill edits (``skill_after/``, deletions from grading.json) to the
skill copy, so deterministic checks and Δ see what the original run left behind. Its wall
time is the recording's (its usage comes back with the events), so budgets judge the run
that was recorded.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import ClassVar

from aeval.artifacts import EvalMetadata
from aeval.errors import RuntimeUnavailable
from aeval.events import EndEvent, read_events
from aeval.run.layout import CaseFiles
from aeval.run.read import read_grading, read_if_there
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult


def _links(folder: str, names: list[str]) -> set[str]:
    """The names in ``folder`` that are symlinks: a recording is aeval's own artifact and holds
    none, so one there was planted and is not followed (its target could be any host file)."""
    return {n for n in names if Path(folder, n).is_symlink()}


def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=_links)


def _inside(root: Path, rel: str) -> Path | None:
    """``root / rel`` when ``rel`` is a plain relative path that stays beneath ``root``."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        return None
    return root / rel


def _recorded_wall(rec: CaseFiles) -> float | None:
    """The recorded executor's wall time (eval_metadata.json), so a regrade judges a
    `max_wall_s` budget by the run it grades, not by how fast the replay was."""
    try:
        meta = read_if_there(rec.eval_metadata, EvalMetadata)
    except (OSError, ValueError):
        return None
    return meta.wall_s if meta is not None else None


class ReplayRuntime:
    name: ClassVar[str] = "replay"
    skills_subdir: ClassVar[str | None] = ".agents/skills"
    needs_model: ClassVar[bool] = False
    runs_steps_verbatim: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = "nothing to install: part of aeval"

    def version(self) -> str | None:
        return "aeval"

    def __init__(self, recordings: dict[str, Path] | None = None):
        """``recordings`` maps a case id, ``skill/case`` or ``skill/case#epoch`` to its
        recorded case folder (the epoch-specific key wins; ``skill`` is the skill's folder
        key in the run, or its name)."""
        self.recordings = {k: Path(v) for k, v in (recordings or {}).items()}

    def check_available(self) -> None:
        return None

    def _recording(self, request: ExecutionRequest) -> Path:
        # by the skill's folder key first: two skills of a marketplace may share a name
        keyed = f"{request.skill_key or request.skill_name}/{request.case_id}"
        case = f"{request.skill_name}/{request.case_id}"
        for key in (f"{keyed}#{request.epoch}", keyed, f"{case}#{request.epoch}", case,
                    request.case_id):
            if key in self.recordings:
                return self.recordings[key]
        raise RuntimeUnavailable(f"no recording for {request.skill_name}/{request.case_id}")

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        start = time.monotonic()
        rec = CaseFiles(self._recording(request))
        events_path = rec.events
        if not events_path.is_file():
            raise RuntimeUnavailable(f"{events_path} does not exist")
        outputs = rec.outputs
        if outputs.is_dir():
            _copy(outputs, request.workspace)
        after = rec.skill_after
        if after.is_dir():  # the executor's edits to the skill, as it left them
            _copy(after, request.skill_dir)
        if (grading := read_grading(rec.dir)) is not None:
            for ch in grading.self_correction.changes_made:
                target = _inside(request.skill_dir, ch.path)
                if ch.change == "deleted" and target is not None and not target.is_dir():
                    target.unlink(missing_ok=True)
        final, status = "", "completed"
        for e in read_events(events_path):
            fields = e.model_dump(exclude={"seq", "t", "kind"})
            if isinstance(e, EndEvent):
                final, status = e.final_text, e.status
            recorder.emit(type(e), **fields)
        if status not in ("completed", "failed", "timeout", "max_turns"):
            status = "failed"
        return ExecutionResult(status=status, final_text=final,
                               wall_s=_recorded_wall(rec) or time.monotonic() - start)
