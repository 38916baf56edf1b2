"""The run store: where artifacts go, written atomically.

The paths inside one run are `aeval.run.layout.RunLayout`'s; this module finds runs in a store
and writes files.

Every file is written to a temporary sibling and renamed into place, so a killed process
leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from aeval.isolation.redact import Redactor
from aeval.run.layout import RUN_MANIFEST

_NO_REDACTION = Redactor()
M = TypeVar("M", bound=BaseModel)


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:  # the folder is new: made once, not checked on every write
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path, text: str, redactor: Redactor = _NO_REDACTION) -> Path:
    return atomic_write_bytes(path, redactor.text(text).encode("utf-8"))


def write_model(path: Path, model: BaseModel, redactor: Redactor = _NO_REDACTION) -> Path:
    """Write a pydantic artifact as indented JSON, redacted, atomically."""
    return atomic_write_text(path, model.model_dump_json(indent=2) + "\n", redactor)


def redacted_model(model: M, redactor: Redactor) -> M:
    """``model`` with every form of every secret of ``redactor`` replaced in its text (through
    its JSON form): for what is rendered or shown from a model, not only written."""
    if not redactor:
        return model
    return type(model).model_validate_json(redactor.text(model.model_dump_json()))


def read_model(path: Path, model: type[M]) -> M:
    return model.model_validate_json(Path(path).read_text(encoding="utf-8"))


def new_run_id(now: datetime | None = None) -> str:
    """Sortable and unique: ``20261130-091500-3f9c2a``."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


class RunStore:
    """Paths of one store root (default ``.aeval``)."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def run_ids(self) -> list[str]:
        if not self.runs.is_dir():
            return []
        return sorted(p.name for p in self.runs.iterdir() if (p / RUN_MANIFEST).is_file())

    def resolve(self, run_id_or_dir: str) -> Path:
        """A run id, ``latest``, or a run directory path -> the run directory."""
        p = Path(run_id_or_dir)
        if (p / RUN_MANIFEST).is_file():
            return p
        if run_id_or_dir == "latest":
            ids = self.run_ids()
            if not ids:
                raise FileNotFoundError(f"no runs in {self.runs}")
            for run_id in reversed(ids):  # the newest run that is not a regrade's replay
                if not _replay_only(self.run_dir(run_id) / RUN_MANIFEST):
                    return self.run_dir(run_id)
            return self.run_dir(ids[-1])
        d = self.run_dir(run_id_or_dir)
        if not (d / RUN_MANIFEST).is_file():
            raise FileNotFoundError(f"no run {run_id_or_dir!r} in {self.runs}")
        return d


def _replay_only(manifest: Path) -> bool:
    """Whether a run is a re-grade's replay of another run (its only runtime is `replay`)."""
    import json

    try:
        return json.loads(manifest.read_text()).get("runtimes") == ["replay"]
    except (OSError, ValueError, AttributeError):
        return False
