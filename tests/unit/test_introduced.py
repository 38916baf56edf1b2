"""Which environment errors a change introduced (aeval/verdicts/introduced.py), and the gate on
them."""

from __future__ import annotations

import pytest

from aeval.artifacts import CaseResult, SkillResult
from aeval.skill.contract import EvalCase
from aeval.verdicts.introduced import introduced_reason
from aeval.verdicts.status import gate

BASE = EvalCase(id="train", prompt="Train.", expected_outcome="Trained.",
                setup=["pip install -r $SKILL_DIR/requirements.txt"],
                preflight=["python3 $SKILL_DIR/scripts/check.py"],
                required_credentials=["HF_TOKEN"], steps=["python3 run.py"])


def edited(**kw) -> EvalCase:
    return BASE.model_copy(update=kw)


@pytest.mark.parametrize("error_type, head, base, base_passes, why", [
    ("PreflightFailed", BASE, None, None, "preflight failed in a case this change adds"),
    ("PreflightFailed", edited(preflight=["nvidia-smi"]), BASE, None,
     "preflight failed and this change edits the case's preflight"),
    ("PreflightFailed", edited(setup=[]), BASE, None, "edits the case's setup"),
    ("SetupFailed", edited(setup=["pip install torch"]), BASE, None, "edits the case's setup"),
    ("MissingCredential", edited(required_credentials=["HF_TOKEN", "WANDB_API_KEY"]), BASE,
     None, "edits the case's required_credentials"),
    ("PreflightFailed", BASE, BASE, True, "preflight passes at the base and fails"),
    ("SetupFailed", BASE, BASE, True, "setup passes at the base and fails"),
    ("PreflightFailed", BASE, BASE, False, None),  # fails on the base too: the environment
    ("PreflightFailed", BASE, BASE, None, None),
    ("MissingCredential", BASE, BASE, True, None),  # CI lacks a credential it always needed
    ("ModelTransientError", edited(preflight=[]), None, None, None),  # never the change's
    ("RuntimeUnavailable", BASE, None, None, None),
    (None, BASE, None, None, None),
])
def test_introduced_reason(error_type, head, base, base_passes, why):
    got = introduced_reason(error_type, head, base, base_passes)
    assert (got is None) if why is None else (got is not None and why in got)


def skill(*cases: CaseResult) -> SkillResult:
    return SkillResult(name="gpu-train", path="/m/gpu-train", status="error", cases=list(cases))


def result(status: str, introduced: str | None = None, case_id: str = "train") -> CaseResult:
    return CaseResult(case_id=case_id, runtime="literal", status=status, reason="x",
                      dir=f"gpu-train/literal/{case_id}", introduced=introduced)


def test_the_gate_counts_an_introduced_environment_error_like_a_failure():
    assert gate([skill(result("error"))]).exit_code == 3
    g = gate([skill(result("error", "preflight failed in a case this change adds"))])
    assert g.exit_code == 1 and "introduced by this change: gpu-train/train" in g.reason
    # a failed case still comes first, and an introduced error outranks invalid and internal
    g = gate([skill(result("fail", case_id="a"), result("error", "x", case_id="b"))])
    assert g.exit_code == 1 and "failed: gpu-train/a" in g.reason
    assert gate([skill(result("internal"), result("error", "x", case_id="b"))]).exit_code == 1
