"""Per-case artifacts: eval_metadata.json and assertions.json."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts.coverage import ResourceUse
from aeval.events import Usage
from aeval.isolation.provision import Provisioning
from aeval.isolation.sandbox import SandboxStatus
from aeval.isolation.workspace import OutputFile
from aeval.skill.contract import SpecCheck, Tier

SCHEMA_VERSION = 1


class Artifact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(SCHEMA_VERSION, description="Version of this file's format.")


# pass: the first attempt met the threshold; fail: a skill defect on the first attempt;
# error: the environment stopped it (after retries: worth retrying); untested: nothing
# runnable for this runtime (the reason says what), never a pass; internal: aeval itself failed.
CaseStatus = Literal["pass", "fail", "error", "untested", "internal"]
AssertionKind = Literal["natural_language", "deterministic", "structural"]
AssertionSource = Literal["author", "writer", "generic", "structural"]


class AssertionSpec(BaseModel):
    """One assertion, fixed before execution."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable id within the case: A1, A2 ...; S1 for structural.")
    text: str = Field(description="The assertion as a sentence (checks get a generated one).")
    kind: AssertionKind
    source: AssertionSource = Field(
        description="author: eval.config; writer: the assertion-writer model; generic: the "
                    "generic tier; structural: always added by aeval."
    )
    check: SpecCheck | None = Field(None, description="The typed check, if any (a `budget` "
                                                      "for the ids B1, B2 ...).")


class AssertionsFile(Artifact):
    """assertions.json: written BEFORE install and execution; the hash proves it unchanged."""

    skill: str
    case_id: str
    written_at: datetime = Field(description="UTC time of writing; earlier than execution start.")
    writer: str = Field(description="`author-only`, or the model that wrote extra assertions.")
    sha256: str = Field(description="sha256 of the canonical JSON of `assertions`.")
    assertions: list[AssertionSpec]

    @staticmethod
    def digest(assertions: list[AssertionSpec]) -> str:
        canon = json.dumps([a.model_dump(mode="json") for a in assertions], sort_keys=True,
                           separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()


class Efficiency(BaseModel):
    """What the graded attempt cost, measured from its events and the runtime's result: the
    same figures for every runtime (a runtime without a model has no turns or tokens)."""

    model_config = ConfigDict(extra="forbid")

    turns: int | None = Field(
        None, description="Model turns: the model requests the runtime counted, else its "
                          "assistant messages. None: no model ran (`literal`).")
    tool_calls: int = Field(0, ge=0, description="Tool calls of every kind.")
    commands: int = Field(0, ge=0, description="Shell commands run: `bash` tool calls (under "
                                               "`literal`, one per step or SKILL.md block).")
    input_tokens: int | None = Field(None, description="Uncached prompt tokens; None: no "
                                                       "model ran.")
    cached_input_tokens: int | None = Field(None, description="Prompt tokens read from a "
                                                              "cache.")
    output_tokens: int | None = Field(None, description="Generated tokens.")
    tokens: int | None = Field(None, description="All of them: prompt (uncached, cached, "
                                                 "cache-write) and output; what `max_tokens` "
                                                 "bounds.")
    wall_s: float = Field(0, ge=0, description="The executor's seconds on the attempt.")
    stopped_at_turn_limit: bool = Field(False, description="The runtime stopped the agent at "
                                                           "`max_turns`.")


class AttemptRecord(BaseModel):
    """One attempt of a case. A retried case has several; only the last one is graded."""

    model_config = ConfigDict(extra="forbid")

    number: int = Field(ge=1)
    started_at: datetime
    ended_at: datetime | None = None
    outcome: Literal["completed", "transient_error", "error"] = Field(
        description="completed: the runtime ran to an end (the skill may still have failed); "
                    "transient_error: retried; error: a permanent environment failure."
    )
    error: str | None = Field(None, description="The environment error, redacted.")
    error_type: str | None = None
    dir: str = Field(description="Folder of this attempt's raw log and events, run-relative.")
    changes: list[str] = Field(
        default_factory=list,
        description="Δ of this attempt, `<change> <path>` per skill file: recorded for every "
                    "attempt, also one that raised.")
    resources: ResourceUse | None = Field(
        None, description="The skill copy's files this attempt read, executed or wrote (from "
                          "the tool calls and the watch); None when it never ran.")
    watched: Literal["full", "partial", "none"] | None = Field(
        None, description="How much of the skill copy the watch covered while the runtime "
                          "ran: full; partial (a folder limit was reached, or events were "
                          "lost: the manifest's file identities cover the rest, with less "
                          "precise times); none (no inotify: the manifest alone). None: the "
                          "runtime never ran.")
    exceeded: str | None = Field(
        None, description="The bound a command of this attempt went over, which killed it "
                          "(`wrote more than 10 GiB`: the disk bound, eval.config's "
                          "`max_disk_mb`); the case then fails. None: none was.")
    provisioning: Provisioning | None = Field(
        None, description="What the provisioning phase fetched from the package registries "
                          "for the skill's declared needs (None: it declared nothing).")
    npm_provisioning: Provisioning | None = Field(
        None, description="What the provisioning phase installed from the npm registry: the "
                          "``package.json`` dependencies of the skill's JS/TS scripts and its "
                          "``npx`` tools (None: it declared none).")
    cut: list[str] = Field(
        default_factory=list,
        description="What a bound of aeval's own work cut in this attempt, one line each: "
                    "output files not listed, copied or hashed, a walk that stopped, skill "
                    "files described by size instead of hashed. Empty: nothing was cut.")


class EvalMetadata(Artifact):
    """eval_metadata.json: what was run, where it came from, what it cost."""

    run_id: str
    skill: str
    skill_path: str
    case_id: str
    runtime: str
    runtime_version: str | None = None
    model: str | None = None
    epoch: int | None = Field(None, description="Epoch number when the run has several.")
    tier: Tier = Field(description="Which contract tier supplied the case.")
    contract: str | None = Field(description="Path of the contract file (None: generic tier).")
    prompt: str
    expected_outcome: str
    required_credentials: list[str] = Field(description="Names only; values never stored.")
    lint_warnings: list[str] = Field(default_factory=list)
    skill_installed: bool = Field(True, description="False: uplift's without-skill arm (the "
                                                    "skill was not installed; $SKILL_DIR was "
                                                    "an empty folder).")
    attempts: list[AttemptRecord] = Field(default_factory=list)
    status: CaseStatus | None = Field(None, description="Filled after grading.")
    usage: Usage = Field(default_factory=Usage, description="Executor tokens of the graded "
                                                             "attempt.")
    wall_s: float | None = Field(None, description="Executor wall time of the graded attempt.")
    started_at: datetime | None = None
    ended_at: datetime | None = None
    outputs: list[OutputFile] = Field(default_factory=list,
                                      description="Files the run created or changed.")
    efficiency: Efficiency | None = Field(None, description="What the graded attempt cost "
                                                            "(None: it never ran).")
    stray_files: list[str] | None = Field(
        None, description="Outputs outside what the case declares (its `outputs`, the paths "
                          "its file checks name). None: the case declares no output (and has "
                          "no `no_stray_files`), or it never ran.")
    sandbox: SandboxStatus | None = Field(
        None, description="The sandbox the case's commands ran in (`none` and why, when "
                          "bubblewrap could not be used).")
