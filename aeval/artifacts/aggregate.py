"""Per skill x runtime artifacts: benchmark, analysis notes, fix suggestions, multi-eval report,
regression; and run.json for the whole run."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from aeval.artifacts.case import Artifact, CaseStatus, Efficiency
from aeval.artifacts.coverage import SkillCoverage
from aeval.events import Usage
from aeval.isolation.sandbox import SandboxStatus
from aeval.skill.contract import Tier
from aeval.strict import StrictModel

# ---- benchmark.json -------------------------------------------------------------------------


class RateStats(StrictModel):
    """A pass rate over the runs (cases x epochs)."""

    mean: float | None
    stddev: float | None = Field(description="Sample standard deviation; None for one run.")
    min: float | None
    max: float | None
    wilson_low: float | None = Field(description="Wilson 95 % interval over pooled assertions.")
    wilson_high: float | None
    n: int = Field(description="Runs with at least one graded assertion.")


class Benchmark(Artifact):
    skill: str
    runtime: str
    runs: int = Field(description="Graded case runs (cases x epochs).")
    statuses: dict[str, int] = Field(description="Count per case status.")
    first_attempt_pass_rate: RateStats
    terminal_pass_rate: RateStats
    usage: Usage = Field(description="Executor tokens summed over the runs.")
    wall_s: RateStats | None = Field(None, description="Executor wall seconds (mean ...).")
    tool_calls: int = 0
    self_corrections: int = Field(0, description="Skill-file changes summed over the runs.")
    assertion_matrix: dict[str, dict[str, bool | None]] = Field(
        default_factory=dict,
        description="case[/epoch] -> assertion id -> first-attempt pass (None = ungraded).",
    )
    coverage: SkillCoverage | None = Field(
        None, description="The skill's files the runs read, executed or wrote, and those "
                          "none touched; None when no run recorded its resource use.")


# ---- analysis_notes.json --------------------------------------------------------------------


class AnalysisNote(StrictModel):
    kind: Literal["non_discriminating", "always_failing", "flaky", "token_outlier",
                  "latency_outlier", "ungraded", "narrative"]
    subject: str = Field(description="The assertion (case:id) or case the note is about.")
    detail: str


class AnalysisNotes(Artifact):
    skill: str
    runtime: str
    notes: list[AnalysisNote] = Field(default_factory=list)
    model: str | None = Field(None, description="Model of the narrative, when one was asked.")


# ---- fix_suggestions.json -------------------------------------------------------------------


class FixSuggestion(StrictModel):
    level: Literal["LV1", "LV2"] = Field(
        description="LV1: causally implicated in a first-attempt failure (gates the merge); "
                    "LV2: an advisory improvement from eval_feedback."
    )
    grounded_in: str = Field(
        description="`case-id:assertion-id` of a failed assertion or `case-id:C<n>` of a "
                    "self_correction.changes_made entry."
    )
    path: str = Field(description="File relative to the skill root.")
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    original: str = Field(description="The file's current lines start..end, exactly.")
    replacement: str
    rationale: str
    validated: bool = Field(
        description="True when the run itself proved the replacement (the executor's own edit)."
    )
    source: Literal["delta", "model", "static"] = Field(
        "model", description="delta: the executor's own edit (Δ); model: the suggester "
                             "model's; static: derived with no model from the static skill "
                             "check (S0), which proves the replacement from the skill's own "
                             "files (a moved script, an option the parser spells otherwise, "
                             "a dropped executable bit).")
    command: str | None = Field(
        None, description="A fix that is no line edit: a command to run in the skill's "
                          "folder (`chmod +x scripts/x.sh` for a dropped executable bit). The "
                          "lines start..end are then the line that needs it, and "
                          "`replacement` equals `original`.")


def case_fixes(suggestions: list[FixSuggestion], case_key: str, ids: list[str]
               ) -> dict[str, list[FixSuggestion]]:
    """The suggestions that answer each of ``ids`` (failed assertions, self-corrections) of
    one case run (``case_key``: ``case`` or ``case#epoch``): those grounded in it, and for a
    static check the static fixes grounded in the same check of another case (each case
    of a skill fails S0 on the same findings; the fix is grounded in the first)."""
    out = {i: [x for x in suggestions if x.grounded_in == f"{case_key}:{i}" or (
        x.source == "static" and x.grounded_in.rsplit(":", 1)[-1] == i)] for i in ids}
    return {i: xs for i, xs in out.items() if xs}


class RejectedSuggestion(StrictModel):
    suggestion: dict
    reason: str


class FixSuggestions(Artifact):
    skill: str
    runtime: str
    suggestions: list[FixSuggestion] = Field(default_factory=list)
    rejected: list[RejectedSuggestion] = Field(default_factory=list)
    causal_share: float | None = Field(description="LV1 / (LV1 + LV2); None when empty.")


# ---- multi_eval_report.json -----------------------------------------------------------------


class CaseResult(StrictModel):
    """One case run, as the run and the report list it."""

    case_id: str
    runtime: str
    epoch: int | None = None
    status: CaseStatus
    reason: str
    passed: int = 0
    failed: int = 0
    ungraded: int = 0
    total: int = 0
    first_attempt_pass_rate: float | None = None
    terminal_pass_rate: float | None = None
    self_corrections: int = 0
    attempts: int = 1
    efficiency: Efficiency | None = Field(None, description="What the graded attempt cost.")
    stray_files: list[str] | None = Field(None, description="Outputs outside what the case "
                                                            "declares.")
    dir: str = Field(description="Case folder, relative to the run folder.")
    supplementary: bool = Field(
        False, description="SKILL.md's doc test run beside a contract's cases: when it is "
                           "`untested` (nothing self-contained to run), the skill's verdict "
                           "and the gate come from the other cases.")
    reused_from: str | None = Field(
        None, description="`<run-id>/<case folder>` whose verdict this is: the case run was "
                          "unchanged since (same fingerprint), so a sweep reused it instead of "
                          "running it again. None: run in this run.")
    introduced: str | None = Field(
        None, description="For an `error` of setup, preflight or a missing credential on a "
                          "run of a change (--changed-since): why the change itself "
                          "introduced it (aeval/verdicts/introduced.py). Such an error does not "
                          "pass "
                          "the gate. None: not the change's, or not a run of a change.")


class MultiEvalReport(Artifact):
    skill: str
    runtime: str
    cases: list[CaseResult]
    verdict: CaseStatus = Field(description="The worst case status: fail, internal, error, "
                                            "untested, then pass.")
    protocol_fidelity: bool


# ---- regression.json ------------------------------------------------------------------------


class AssertionDelta(StrictModel):
    case_id: str
    assertion_id: str
    text: str


class Regression(Artifact):
    skill: str
    runtime: str
    baseline_run: str | None
    pass_rate_delta: dict[str, float | None] = Field(default_factory=dict,
                                                     description="case -> now - baseline")
    newly_failing: list[AssertionDelta] = Field(default_factory=list)
    newly_passing: list[AssertionDelta] = Field(default_factory=list)


# ---- run.json -------------------------------------------------------------------------------


class SkillResult(StrictModel):
    name: str
    key: str | None = Field(None, description="The skill's folder in the run (its name, made "
                                              "unique when two skills share one).")
    path: str
    status: Literal["pass", "fail", "error", "untested", "internal", "invalid", "skipped"]
    tier: Tier | None = None
    problems: list[str] = Field(default_factory=list, description="Why invalid.")
    warnings: list[str] = Field(default_factory=list, description="Lint warnings.")
    cases: list[CaseResult] = Field(default_factory=list)


class Gate(StrictModel):
    """The run's verdict for CI (`aeval.verdicts.status.gate`; the codes: aeval/exit_codes.py)."""

    exit_code: Literal[0, 1, 2, 3, 4, 5]
    reason: str
    tested: int = Field(0, description="Case runs that were tested: passed or failed (a "
                                       "verdict reused from an unchanged earlier run "
                                       "included), counted as the gate counts them.")
    untested: int = Field(0, description="Case runs that were `untested` (nothing runnable "
                                         "for their runtime, or nothing of the skill ran).")
    nothing_tested: bool = Field(False, description="True when the run had cases and none was "
                                                    "tested: green by default (exit 0), but "
                                                    "it proved nothing; --min-tested makes it "
                                                    "exit 5.")
    min_tested: int = Field(0, description="The tested case runs the run required "
                                           "(--min-tested, AEVAL_MIN_TESTED); fewer is "
                                           "exit 5.")


class RunManifest(Artifact):
    """run.json."""

    run_id: str
    created_at: datetime
    finished_at: datetime | None = None
    status: Literal["running", "finished", "cancelled"] = Field(
        "running", description="cancelled: stopped by a signal (SIGTERM, SIGINT) before every "
        "case finished; `aeval run --resume` runs the cases in `cancelled`.")
    cancelled: list[str] = Field(
        default_factory=list, description="The case runs a signal stopped before they "
        "finished (no grading.json), as `skill/runtime/case[/epoch-N]` folders.")
    cancelled_by: str | None = Field(None, description="The signal that stopped the run.")
    aeval_version: str
    prefect_version: str | None = None
    paths: list[str]
    base: str | None = Field(None, description="--changed-since ref, when used.")
    head: str | None = None
    runtimes: list[str]
    model: str | None = None
    grader_model: str | None = None
    epochs: int = 1
    skills: list[SkillResult] = Field(default_factory=list)
    totals: dict[str, int] = Field(default_factory=dict, description="Case count per status.")
    gate: Gate | None = None
    delivery: str | None = Field(None, description="Outcome of posting to the MR, if asked.")
    api_base: str | None = Field(None, description="Model API base URL, if overridden.")
    skill_roots: list[str] = Field(default_factory=list,
                                   description="The skill folders the run planned.")
    sandbox: SandboxStatus | None = Field(
        None, description="The sandbox of the run's commands: bwrap, or none and why.")
    flow_run_id: str | None = Field(
        None, description="The Prefect flow run that started the run (a resumed run keeps "
        "it: `--resume` sets its state to the resumed outcome).")
    parent_flow_run_id: str | None = Field(
        None, description="That flow run's parent (the sweep's or merge request's flow run), "
        "if any; `aeval sweep --resume` sets its state too.")


class SuggesterItem(StrictModel):
    """One suggestion as the suggester model proposes it (checked before it is kept)."""

    level: Literal["LV1", "LV2"]
    grounded_in: str
    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    original: str
    replacement: str
    rationale: str = ""


class SuggesterAnswer(StrictModel):
    """The suggester's JSON answer (eval_skill/agents/suggester.md)."""

    suggestions: list[SuggesterItem] = Field(default_factory=list)


# ---- baselines.json (the store's last-known-good results) -----------------------------------


class BaselineEntry(StrictModel):
    """The last-known-good result of one skill x runtime x case."""

    run_id: str
    recorded_at: datetime
    first_attempt_pass_rate: float | None
    assertions: dict[str, bool | None] = Field(
        description="Assertion text -> first-attempt pass (all epochs), None when ungraded.")
    ids: dict[str, str] = Field(default_factory=dict, description="Assertion text -> id.")


class Baselines(Artifact):
    """<store>/baselines.json, refreshed by the nightly sweep."""

    entries: dict[str, BaselineEntry] = Field(
        default_factory=dict, description="`skill/runtime/case` -> last-known-good result.")


class VerdictEntry(StrictModel):
    """The last verdict given for one case-run fingerprint."""

    run_id: str
    dir: str = Field(description="Case folder, relative to that run's folder.")
    status: CaseStatus
    recorded_at: datetime


class VerdictIndex(Artifact):
    """<store>/verdicts.json: the last verdict per case-run fingerprint (aeval/run/fingerprint.py),
    updated by every run; a sweep reuses an entry whose fingerprint matches."""

    entries: dict[str, VerdictEntry] = Field(
        default_factory=dict, description="Fingerprint (sha256) -> last verdict.")
