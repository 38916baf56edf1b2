"""The uplift statistics (aeval/stats/uplift.py) on tables whose answers are checked by hand."""

from __future__ import annotations

import pytest

from aeval.artifacts.uplift import PairOutcome
from aeval.stats.uplift import (
    mcnemar_exact_p,
    newcombe_paired_ci,
    skill_uplifts,
    uplift_gate,
    uplift_stats,
)


def pair(with_status: str | None, without_status: str | None, case: str = "train",
         epoch: int | None = None, skill: str = "segmentation", tokens=(0, 0)) -> PairOutcome:
    return PairOutcome(skill=skill, runtime="builtin", case_id=case, epoch=epoch,
                       with_status=with_status, without_status=without_status,
                       comparable=with_status in ("pass", "fail")
                       and without_status in ("pass", "fail"),
                       with_tokens=tokens[0], without_tokens=tokens[1],
                       with_wall_s=1.0, without_wall_s=3.0)


def table(a: int, b: int, c: int, d: int) -> list[PairOutcome]:
    return ([pair("pass", "pass")] * a + [pair("pass", "fail")] * b
            + [pair("fail", "pass")] * c + [pair("fail", "fail")] * d)


def test_exact_mcnemar_p_on_a_known_table():
    # 2 of 14 discordant pairs go one way: 2 * P(X <= 2 | 14, 1/2) = 2 * (1+14+91) / 2^14
    assert mcnemar_exact_p(12, 2) == pytest.approx(212 / 16384)
    # 6 discordant pairs all one way: 2 / 2^6, the fewest that reach p < 0.05
    assert mcnemar_exact_p(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact_p(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact_p(0, 0) == 1.0


def test_newcombe_interval_on_a_hand_computed_case():
    # a=5 b=5 c=0 d=0, n=10: p1 = 1, p2 = 0.5, phi = 0 (the c+d margin is empty).
    # Wilson, z = 1.959964: 10/10 -> l1 = 10 / (10 + z^2) = 0.722467, u1 = 1;
    # 5/10 -> 0.5 +- z sqrt(0.025 + z^2/400) / (1 + z^2/10) = [0.236593, 0.763407].
    # lower = 0.5 - sqrt((1 - 0.722467)^2 + (0.763407 - 0.5)^2) = 0.117367
    # upper = 0.5 + sqrt((1 - 1)^2 + (0.5 - 0.236593)^2) = 0.763407
    low, high = newcombe_paired_ci(5, 5, 0, 0)
    assert low == pytest.approx(0.117367, abs=1e-5)
    assert high == pytest.approx(0.763407, abs=1e-5)


def test_newcombe_interval_uses_the_correlation_of_the_pairs():
    # (36, 12, 2, 0), n=50: p1 = 0.96, p2 = 0.76, phi = -24 / sqrt(48*2*38*12) = -0.114708;
    # Wilson 48/50 = [0.865399, 0.988961], 38/50 = [0.625873, 0.857026];
    # lower = 0.2 - sqrt(0.094601^2 + 2*0.114708*0.094601*0.097026 + 0.097026^2) = 0.056929
    # upper = 0.2 + sqrt(0.028961^2 + 2*0.114708*0.028961*0.134127 + 0.134127^2) = 0.340428
    low, high = newcombe_paired_ci(36, 12, 2, 0)
    assert (low, high) == pytest.approx((0.056930, 0.340428), abs=1e-5)
    assert low < 0.2 < high


def test_all_ties_give_no_uplift_a_p_of_one_and_a_symmetric_interval():
    s = uplift_stats(table(3, 0, 0, 3))
    assert (s.pairs, s.uplift, s.mcnemar_p, s.verdict, s.flagged) == (
        6, 0.0, 1.0, "no_difference", False)
    assert s.ci_low == pytest.approx(-s.ci_high) and s.ci_low <= 0 <= s.ci_high
    every_pass = uplift_stats(table(4, 0, 0, 0))
    assert every_pass.with_skill.pass_rate == every_pass.without_skill.pass_rate == 1.0
    assert every_pass.ci_low < 0 < every_pass.ci_high


def test_one_pair_is_never_significant():
    s = uplift_stats(table(0, 0, 1, 0))
    assert (s.uplift, s.mcnemar_p, s.verdict, s.flagged) == (-1.0, 1.0, "negative", True)
    assert s.ci_low >= -1.0 and s.ci_high > 0
    s = uplift_stats(table(0, 1, 0, 0))
    assert (s.uplift, s.verdict, s.flagged) == (1.0, "positive", False)


def test_six_pairs_against_the_skill_hurt_and_six_for_it_help():
    hurt = uplift_stats(table(0, 0, 6, 0))
    assert (hurt.verdict, hurt.flagged, hurt.uplift) == ("hurts", True, -1.0)
    assert hurt.ci_high < 0
    helps = uplift_stats(table(0, 6, 0, 0))
    assert (helps.verdict, helps.flagged, helps.uplift) == ("helps", False, 1.0)
    assert helps.ci_low > 0


def test_pairs_with_an_arm_that_did_not_pass_or_fail_are_excluded():
    s = uplift_stats([pair("pass", "fail"), pair("error", "pass"), pair("pass", "untested"),
                      pair(None, "pass")])
    assert (s.pairs, s.excluded, s.with_only) == (1, 3, 1)
    none = uplift_stats([pair("error", "error")])
    assert (none.pairs, none.verdict, none.uplift, none.mcnemar_p) == (0, "no_data", None, None)


def test_tokens_and_wall_time_are_means_over_the_counted_pairs():
    s = uplift_stats([pair("pass", "fail", tokens=(100, 300)),
                      pair("pass", "pass", tokens=(200, 500)),
                      pair("error", "pass", tokens=(9999, 9999))])
    assert s.with_skill.mean_tokens == 150 and s.without_skill.mean_tokens == 400
    assert s.with_skill.mean_wall_s == 1.0 and s.without_skill.mean_wall_s == 3.0


def test_per_case_and_pooled_per_skill():
    pairs = [pair("pass", "fail", case="a", epoch=e) for e in (1, 2, 3)] + [
        pair("fail", "pass", case="b", epoch=e) for e in (1, 2, 3)]
    (sk,) = skill_uplifts(pairs)
    assert [c.case_id for c in sk.cases] == ["a", "b"]
    assert [c.stats.uplift for c in sk.cases] == [1.0, -1.0]
    assert sk.stats.pairs == 6 and sk.stats.uplift == 0.0 and sk.stats.mcnemar_p == 1.0


def test_gate_fails_only_a_significantly_negative_uplift():
    hurt = skill_uplifts(table(0, 0, 6, 0))
    assert uplift_gate(hurt, table(0, 0, 6, 0), []).exit_code == 1
    weak = skill_uplifts(table(0, 0, 2, 0))
    g = uplift_gate(weak, table(0, 0, 2, 0), [])
    assert g.exit_code == 0 and "negative uplift, not significant" in g.reason
    assert uplift_gate(weak, table(0, 0, 2, 0), ["broken"]).exit_code == 2
    errored = [pair("error", "pass")]
    assert uplift_gate(skill_uplifts(errored), errored, []).exit_code == 3
    internal = [pair("pass", "internal"), pair("error", "pass")]
    assert uplift_gate(skill_uplifts(internal), internal, []).exit_code == 4


def skill(tmp_path):
    root = tmp_path / "ledger-balance"
    root.mkdir()
    (root / "SKILL.md").write_text("---\nname: ledger-balance\ndescription: Compute the closing "
                                   "balance of a ledger CSV.\n---\n# Ledger balance\n")
    return root


@pytest.mark.parametrize(("args", "message"), [
    (["--runtime", "literal", "--model", "openai/x"], "--runtime literal: uplift needs an agent "
                                                      "runtime"),
    (["--runtime", "replay", "--model", "openai/x"], "--runtime replay: uplift needs an agent "
                                                     "runtime"),
    ([], "an agent runtime needs --model (or AEVAL_MODEL)"),
    (["--model", "openai/x", "--epochs", "0"], "--epochs must be at least 1"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, capsys, args, message):
    from aeval.deployments.cli.main import main

    assert main(["uplift", str(skill(tmp_path)), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aeval uplift: ") and message in err and err.count("\n") == 1


def test_a_folder_without_skills_is_a_usage_error(tmp_path, capsys, monkeypatch):
    from aeval.deployments.cli.main import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # else the missing key is said first
    assert main(["uplift", str(tmp_path), "--model", "openai/x"]) == 2
    assert "no SKILL.md found under" in capsys.readouterr().err


def test_the_flow_request_refuses_runtimes_without_an_agent():
    from pydantic import ValidationError

    from aeval.run.requests import UpliftRequest

    with pytest.raises(ValidationError, match="uplift needs an agent runtime, not literal"):
        UpliftRequest(runtimes=["builtin", "literal"])
    assert UpliftRequest(model="openai/x").with_id().uplift_id
