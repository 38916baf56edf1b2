"""Artifact models: the file format of every artifact, and the source of every JSON Schema."""

from __future__ import annotations

from pydantic import BaseModel

from aeval.artifacts.aggregate import (
    AnalysisNote,
    AnalysisNotes,
    AssertionDelta,
    BaselineEntry,
    Baselines,
    Benchmark,
    CaseResult,
    FixSuggestion,
    FixSuggestions,
    Gate,
    MultiEvalReport,
    RateStats,
    Regression,
    RejectedSuggestion,
    RunManifest,
    SkillResult,
    SuggesterAnswer,
    SuggesterItem,
    VerdictEntry,
    VerdictIndex,
    case_fixes,
)
from aeval.artifacts.case import (
    SCHEMA_VERSION,
    AssertionsFile,
    AssertionSpec,
    AttemptRecord,
    Efficiency,
    EvalMetadata,
)
from aeval.artifacts.compare import (
    Agreement,
    AssertionVerdicts,
    CompareReport,
    CompareRow,
    RaterError,
    RaterSummary,
    RaterVerdict,
    RefusedTools,
    RegradeReport,
    TierDifference,
)
from aeval.artifacts.grading import (
    ChangeMade,
    Claim,
    EvalFeedback,
    ExecutionMetrics,
    Expectation,
    FeedbackItem,
    FirstAttemptError,
    GraderAnswer,
    GraderInfo,
    GraderVerdict,
    Grading,
    GradingSummary,
    ProbeResult,
    SelfCorrection,
    Timing,
)
from aeval.artifacts.pairwise import (
    CasePairwise,
    ComparativeAnswer,
    ComparativeReason,
    HeadVsBase,
    OrderVerdict,
    SideCost,
    SkillPairwise,
)
from aeval.artifacts.triggers import TriggerScore, TriggersReport, TriggerTrial
from aeval.artifacts.uplift import (
    ArmStats,
    CaseUplift,
    PairOutcome,
    SkillUplift,
    UpliftGate,
    UpliftReport,
    UpliftStats,
)
from aeval.events import EVENT_ADAPTER
from aeval.skill.contract import EvalConfig

# `aeval schema NAME` and eval_skill/schemas/NAME.schema.json
SCHEMAS: dict[str, type[BaseModel]] = {
    "eval-config": EvalConfig,
    "run": RunManifest,
    "eval-metadata": EvalMetadata,
    "assertions": AssertionsFile,
    "grading": Grading,
    "benchmark": Benchmark,
    "analysis-notes": AnalysisNotes,
    "fix-suggestions": FixSuggestions,
    "multi-eval-report": MultiEvalReport,
    "regression": Regression,
    "grader-answer": GraderAnswer,
    "suggester-answer": SuggesterAnswer,
    "baselines": Baselines,
    "verdicts": VerdictIndex,
    "compare": CompareReport,
    "regrade": RegradeReport,
    "uplift": UpliftReport,
    "triggers": TriggersReport,
    "head-vs-base": HeadVsBase,
    "comparative-answer": ComparativeAnswer,
}


def json_schema(name: str) -> dict:
    """The JSON Schema of one artifact (``event`` is one line of events.jsonl)."""
    if name == "event":
        schema = EVENT_ADAPTER.json_schema()
        schema["title"] = "Event"
    else:
        schema = SCHEMAS[name].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://aeval.dev/schemas/{name}.schema.json"
    return schema


SCHEMA_NAMES = sorted([*SCHEMAS, "event"])

__all__ = [
    "SCHEMAS",
    "SCHEMA_NAMES",
    "SCHEMA_VERSION",
    "Agreement",
    "AnalysisNote",
    "AnalysisNotes",
    "ArmStats",
    "AssertionDelta",
    "AssertionSpec",
    "AssertionVerdicts",
    "AssertionsFile",
    "AttemptRecord",
    "BaselineEntry",
    "Baselines",
    "Benchmark",
    "CasePairwise",
    "CaseResult",
    "CaseUplift",
    "ChangeMade",
    "Claim",
    "ComparativeAnswer",
    "ComparativeReason",
    "CompareReport",
    "CompareRow",
    "Efficiency",
    "EvalFeedback",
    "EvalMetadata",
    "ExecutionMetrics",
    "Expectation",
    "FeedbackItem",
    "FirstAttemptError",
    "FixSuggestion",
    "FixSuggestions",
    "Gate",
    "GraderAnswer",
    "GraderInfo",
    "GraderVerdict",
    "Grading",
    "GradingSummary",
    "HeadVsBase",
    "MultiEvalReport",
    "OrderVerdict",
    "PairOutcome",
    "ProbeResult",
    "RateStats",
    "RaterError",
    "RaterSummary",
    "RaterVerdict",
    "RefusedTools",
    "RegradeReport",
    "Regression",
    "RejectedSuggestion",
    "RunManifest",
    "SelfCorrection",
    "SideCost",
    "SkillPairwise",
    "SkillResult",
    "SkillUplift",
    "SuggesterAnswer",
    "SuggesterItem",
    "TierDifference",
    "Timing",
    "TriggerScore",
    "TriggerTrial",
    "TriggersReport",
    "UpliftGate",
    "UpliftReport",
    "UpliftStats",
    "VerdictEntry",
    "VerdictIndex",
    "case_fixes",
    "json_schema",
]
