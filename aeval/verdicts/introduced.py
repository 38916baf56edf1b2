"""An environment error the change itself introduced: it does not pass the gate.

An environment error (`error`) is normally not the skill's fault and never blocks a merge as
a skill defect. But a merge request can walk around the gate that way: make the skill's own
setup or preflight fail, or declare a credential CI does not have, and a broken skill turns
into a green (allowed-to-fail) pipeline. So on a run of a change (``--changed-since BASE``),
an environment error of setup, preflight or a missing credential is the change's own when

- the case is new in the change (the skill, or the case, did not exist at the base), or
- the change touched what failed: the case's ``setup``, ``preflight`` or
  ``required_credentials`` differ from the base's, or
- the base's own setup and preflight pass here while the head's fail (the change broke
  something they use, a script of the skill's, say).

Such a case stays `error` (it is still the environment that stopped it), carries the reason
in `CaseResult.introduced`, and the gate counts it like a failed case (exit 1). An error of
the model API, a runtime, the grader, or of a preflight the change did not touch and that
fails on the base too, stays an environment error (exit 3)."""

from __future__ import annotations

from aeval.artifacts import SkillResult
from aeval.skill.contract import EvalCase

PHASES = {"SetupFailed": "setup", "PreflightFailed": "preflight",
          "MissingCredential": "required credentials"}
"""The environment errors a change can introduce (error type -> what failed)."""
FIELDS = ("setup", "preflight", "required_credentials")
"""The case's fields that decide those errors."""


def changed_fields(head: EvalCase, base: EvalCase) -> list[str]:
    """The fields of `FIELDS` whose value differs between the base's case and the head's."""
    return [f for f in FIELDS if getattr(head, f) != getattr(base, f)]


def introduced_reason(error_type: str | None, head: EvalCase, base: EvalCase | None,
                      base_passes: bool | None = None) -> str | None:
    """Why the environment error ``error_type`` of the head's case ``head`` is the change's
    own, or None when it is not. ``base``: the same case at the base (None: it did not exist
    there); ``base_passes``: whether the base's setup and preflight pass here (None: not
    tried)."""
    phase = PHASES.get(error_type or "")
    if phase is None:
        return None
    if base is None:
        return f"{phase} failed in a case this change adds"
    if changed := changed_fields(head, base):
        return f"{phase} failed and this change edits the case's {', '.join(changed)}"
    if base_passes and error_type != "MissingCredential":
        return f"{phase} passes at the base and fails with this change"
    return None


def introduced_errors(skills: list[SkillResult]) -> list[str]:
    """``skill/case`` of every case whose environment error the change introduced."""
    return [f"{s.name}/{c.case_id}" for s in skills for c in s.cases
            if c.status == "error" and c.introduced]
