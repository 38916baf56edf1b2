"""One finding of the static skill check (S0), the model every part of S0 makes
(`aeval.verdicts.static_check`, its deep tier `deep_check`, `resource_check`) and the verdict
and the run record read. A leaf: it imports none of the checks."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aeval.skill.skill_md import SKILL_FILE


class StaticFinding(BaseModel):
    """One problem the static check found, tied to the line that names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(description="The skill file whose line names the problem (SKILL.md, or "
                                  "a reference file it links to).")
    line: int = Field(description="That file's line (1-based).")
    via: int | None = Field(None, description="For a reference file: the SKILL.md line that "
                                              "links to it.")
    kind: str = Field(description="missing | not_executable | rejected | corrupt; the deep "
                                  "tier's (the code of what runs): syntax_error | "
                                  "undefined_name | broken_import | shell_error")
    path: str = Field(description="The skill-relative path concerned.")
    problem: str = Field(description="What is wrong, in one line.")
    word: str | None = Field(None, description="The word of the line the problem is, as "
                                               "written there, when it is not `path` (a "
                                               "rejected option `--out` or subcommand "
                                               "`segment_train`); what a static fix "
                                               "replaces (`aeval.verdicts.static_fix`).")
    severity: Literal["defect", "warning"] = Field(
        "defect", description="defect: the skill fails S0 (what a block runs, what a link or "
                              "SKILL.md names). warning: shown to the user, never a fail (a "
                              "mention in a reference file's prose, a generic example name, a "
                              "layout tree's entry).")

    def located(self, root: Path | str) -> str:
        """The finding as one line naming the file under ``root`` (``aeval validate``)."""
        via = f" (linked from {SKILL_FILE} line {self.via})" if self.via is not None else ""
        return f"{Path(root) / self.file}:{self.line}: {self.problem}{via}"

    def __str__(self) -> str:
        where = f"{self.file} line {self.line}"
        if self.via is not None:
            where += f" (linked from {SKILL_FILE} line {self.via})"
        return f"{where}: {self.problem}"
