"""The paper's segmentation case as every runtime test drives it: one `train` case on a copy
of examples/marketplace/skills/segmentation, whose SKILL.md names `segment_train` while its
runner only knows `train`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import EXAMPLES

PROMPT = "Train a segmentation model on fixtures/ with the segmentation skill, writing to outputs/."
MATCH = "Train a segmentation model on fixtures/"
ROW = "| `segment_train` | trains a model on the data folder and writes `outputs/model.json` |"
GITLAB_TOKEN = "glpat-canary-do-not-leak"
TRAIN_CASE = {
    "id": "train", "prompt": PROMPT,
    "expected_outcome": "outputs/model.json exists and the final mIoU is printed.",
    "files": ["fixtures/"],
    "assertions": [{"type": "file_exists", "path": "outputs/model.json"},
                   {"type": "transcript_regex", "pattern": "mIoU=\\d",
                    "source": "tool_output"},
                   {"type": "commands_succeeded"},
                   "The skill's configured action names work without modification"],
    "timeout_s": 120, "max_turns": 12,
}


REAL_HOME = Path.home()  # the machine's, read at import, before any test patches HOME


def load(p: Path) -> dict:
    return json.loads(p.read_text())


def tree(p: Path) -> list[tuple[str, int]]:
    """(path, mtime) of everything under ``p``, links as links (a dangling one left by
    another program is part of the folder too): to prove a folder was left untouched."""
    return sorted((str(f), f.lstat().st_mtime_ns) for f in p.rglob("*")) if p.exists() else []


def segmentation_copy(root: Path, case: dict | None = None, healthy: bool = False) -> Path:
    """A copy of the segmentation skill with a one-case eval.config. ``healthy``: its SKILL.md
    names the runner's own actions (`train` ...), so the skill has no defect: for tests about
    the environment (an outage must end `error`, not `fail`)."""
    d = root / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", d)
    (d / "eval.config").write_text(json.dumps({"evals": [case or TRAIN_CASE]}))
    if healthy:
        md = d / "SKILL.md"
        md.write_text(md.read_text().replace("segment_", ""))
    return d
