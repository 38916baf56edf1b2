"""Which of SKILL.md's blocks the doc test found self-contained: what `aeval init` (without a
model) may write as a contract's steps, and what it must leave to the author as a TODO with
what the block needs (`aeval.skill.contract_draft.template_config` writes both).

A step must never fail for what the reader supplies (a host tool, a module, an input file, a
value for a placeholder), or the first `aeval run` blames the skill for a defect it does not
have. So a block becomes a step only when the doc test ran it cleanly and it takes nothing
from a block that did not run cleanly, or when it broke in the skill's own code (that defect
is the skill's, and the step shows it). Pure: the doc test's outcomes in, a decision per
block out.
"""

from __future__ import annotations

from pathlib import Path

from aeval.skill.contract_draft import documented_blocks
from aeval.skill.shell_blocks import BlockPlan, plan_blocks
from aeval.skill.shellparse import Effects, related
from aeval.skill.skill_md import Skill
from aeval.verdicts.doctest import BlockOutcome, taints
from aeval.verdicts.documented import skill_files


def _takes(needs: Effects, earlier: Effects, shipped: frozenset[str]) -> str | None:
    """What a block takes from an earlier one, by what its text shows (None: nothing): a
    variable the earlier one sets, the folder its `cd` leaves the reader in, a path it
    would have made. Narrower than the doc test's `depends`, which also counts any export
    (a failure's cause may hide in a script): a block that ran cleanly without the earlier
    one runs the same way as a step."""
    shared = sorted(needs.uses & (earlier.sets | earlier.exports))
    if shared:
        return f"it uses ${shared[0]}"
    if earlier.cd is not None:
        return f"the reader's shell would be in {earlier.cd}"
    made = earlier.writes | {n for n in earlier.names if n not in shipped}
    for n in sorted(needs.names | needs.runs):
        hit = next((m for m in sorted(made) if related(n, m)), None)
        if hit is not None:
            return f"it would have made {hit}"
    return None


def sort_blocks(plans: list[BlockPlan], outcomes: list[BlockOutcome] | None,
                shipped: frozenset[str], not_run: str = "not run by aeval init"
                ) -> list[tuple[BlockPlan, str | None]]:
    """Each planned block with None (it becomes a step) or what it needs (a TODO step).

    ``outcomes``: the doc test's, one per plan in order (None: the doc test did not run, and
    ``not_run`` says why; every runnable block is then a TODO). A step is a block that ran
    cleanly and takes nothing from a block that did not (`_takes`: a variable, a folder, a
    file such a block would have left), or one that broke in the skill's own
    code (a defect the skill has). A skipped block that takes nothing away (comments only,
    an example of what not to do, an install) is left out: nothing there to run."""
    out: list[tuple[BlockPlan, str | None]] = []
    unclean: list[tuple[BlockPlan, BlockOutcome]] = []
    for i, plan in enumerate(plans):
        o = outcomes[i] if outcomes is not None and i < len(outcomes) else None
        if o is None:
            if plan.action == "skip" and not plan.taints:
                continue
            why = not_run if outcomes is None else "not reached: the doc test stopped first"
            out.append((plan, plan.reason if plan.action == "skip" else why))
            continue
        if o.outcome == "skipped":
            if plan.taints:
                out.append((plan, o.reason or "skipped by the doc test"))
        else:
            # a block that needs what one that did not run cleanly would have left: that
            # block is what the author must make runnable first (a clean one's `cd` or
            # variables are as missing from a step's shell as from the doc test's)
            dep = None if o.outcome == "defect" else next(
                (f"it may depend on SKILL.md line {e.line}, {eo.reason or eo.outcome} ({why})"
                 for e, eo in unclean if eo.outcome != "ok"
                 and (why := _takes(plan.effects, e.effects, shipped)) is not None), None)
            if o.outcome in ("ok", "defect"):
                out.append((plan, None if dep is None else f"it ran, but {dep}"))
            else:
                own = o.reason or o.outcome
                out.append((plan, own if dep is None else f"{own}; {dep}"))
        if taints(plan, o):
            unclean.append((plan, o))
    return out


def steps_from_doc_test(skill: Skill, outcomes: list[BlockOutcome] | None,
                        not_run: str = "not run by aeval init"
                        ) -> list[tuple[BlockPlan, str | None]]:
    """`sort_blocks` for ``skill``'s SKILL.md blocks (as `documented_blocks` gives them to
    the doc test), given what each did."""
    return sort_blocks(plan_blocks(documented_blocks(skill)), outcomes,
                       skill_files(Path(skill.path)), not_run)


def rehearsed(skill: Skill, blocks: list[tuple[BlockPlan, str | None]],
              outcomes: list[BlockOutcome], failures: list[str | None]
              ) -> list[tuple[BlockPlan, str | None]]:
    """``blocks`` after their steps were rehearsed from the workspace (``failures``: one per
    block, in order, as `aeval.tasks.skill.doc_probe.rehearse_steps` gives them). A block
    that ran cleanly from the skill folder but fails as a step names something relative to
    the folder it runs in (``validate.py .``): the author's to write with ``$SKILL_DIR``, a
    TODO, never a defect of the skill. A block that broke in the skill's own code stays a
    step: it fails there too, and that is the skill's."""
    plans = plan_blocks(documented_blocks(skill))
    defects = {(p.line, p.code) for p, o in zip(plans, outcomes, strict=False)
               if o.outcome == "defect"}
    out = []
    for (plan, why), failed in zip(blocks, [*failures, *[None] * len(blocks)], strict=False):
        if why is None and failed is not None and (plan.line, plan.code) not in defects:
            why = (f"it ran from the skill folder (the doc test), but as a step from the "
                   f"workspace it {failed}: a path relative to the skill folder? write it "
                   "with $SKILL_DIR")
        out.append((plan, why))
    return out
