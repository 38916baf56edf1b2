"""What of a skill a case run used (grading.json's `resources`) and the runs of one runtime
used (benchmark.json's `coverage`); how they are found is `aeval.verdicts.coverage`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ResourceUse(BaseModel):
    """The files of the skill copy one attempt used, by skill-relative POSIX path."""

    model_config = ConfigDict(extra="forbid")

    read: list[str] = Field(default_factory=list,
                            description="Read: a file tool, a command naming it, or an open the "
                                        "watch saw (not executed).")
    executed: list[str] = Field(default_factory=list,
                                description="Run as a program or as an interpreter's script by "
                                            "a command of the agent.")
    written: list[str] = Field(default_factory=list,
                               description="Written by a file tool or a redirection, or seen "
                                           "written by the watch.")
    watched: bool = Field(False, description="True when the watch saw opens (any process): "
                                             "False means the events alone were used.")
    exercised: list[str] = Field(
        default_factory=list,
        description="Evidence that the attempt exercised the skill: each skill file run, or "
                    "read by a tool call that succeeded, with the event (`scripts/x.py "
                    "executed by event 3`). Empty: nothing of the skill ran, and the case "
                    "cannot pass.")

    def touched(self) -> set[str]:
        return set(self.read) | set(self.executed) | set(self.written)


class SkillCoverage(BaseModel):
    """Which shipped files of a skill the runs of one runtime used (benchmark.json)."""

    model_config = ConfigDict(extra="forbid")

    runs: int = Field(description="Case runs with a resource record (the graded attempt's).")
    files: list[str] = Field(description="The skill's own runnable and reference files: every "
                                         "file but SKILL.md, the contract, licence and ignore "
                                         "files, the cases' input files and caches.")
    read: dict[str, int] = Field(default_factory=dict,
                                 description="File -> runs that read it (not executed).")
    executed: dict[str, int] = Field(default_factory=dict,
                                     description="File -> runs that executed it.")
    written: dict[str, int] = Field(default_factory=dict,
                                    description="File -> runs that wrote it (see Δ).")
    untouched: list[str] = Field(default_factory=list,
                                 description="Files no run read, executed or wrote: dead "
                                             "scripts, untested references.")
    watched: bool = Field(description="True when every run's watch saw opens by any process; "
                                      "False: some runs counted from the tool calls alone.")
