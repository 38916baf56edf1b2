"""aeval compare (one row per runtime / model) and aeval regrade (another grader on the same
recorded transcripts), against the scripted model server."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from aeval.deployments.cli.main import main
from aeval.tasks.studies.compare import COLUMNS
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import EXAMPLES, ROOT
from tests.integration.test_builtin_runtime import EDITS_SKILL
from tests.integration.test_grade_and_suggest import ALL_PASS, CASE, NO_EXTRA, grader

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_compare_two_models_on_the_examples_prints_every_column(tmp_path, capsys):
    explore = Script(name="explore", match="You are the EXECUTOR", turns=[
        Turn(tool_calls=[ToolCall(name="bash", arguments={
            "command": "ls .agents/skills && head -3 .agents/skills/*/SKILL.md"})]),
        Turn(text="Looked at the skill.")])
    mp = tmp_path / "mp"
    shutil.copytree(EXAMPLES, mp)
    with ScriptedModelServer([explore]) as srv:
        code = main(["compare", str(mp), "--runtime", "builtin", "--model", "openai/model-a",
                     "--model", "openai/model-b", "--runtime", "literal", "--no-grader",
                     "--api-base", srv.base_url_openai, "--out", str(tmp_path / "s"), "-q"])
    assert code == 1  # the examples' defective skills fail their cases in every row
    out = capsys.readouterr().out
    assert "gate: exit 1 (builtin:openai/model-a: " in out
    header = next(line for line in out.splitlines() if line.startswith("| runtime"))
    assert [c.strip() for c in header.strip("|").split("|")] == list(COLUMNS)
    rows = [line for line in out.splitlines() if line.startswith("| builtin:")
            or line.startswith("| literal")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "builtin:openai/model-a", "builtin:openai/model-b", "literal"]
    (cmp_dir,) = (tmp_path / "s" / "compare").iterdir()
    report = json.loads((cmp_dir / "compare.json").read_text())
    a, b, lit = report["rows"]
    assert a["cases"] == b["cases"] == lit["cases"] == 7
    assert a["tokens_in"] > 0 and a["tokens_cached"] > 0 and lit["tokens_in"] == 0
    assert lit["statuses"] == {"pass": 4, "fail": 3}
    assert a["wall_minutes"] > 0 and a["executor_minutes"] > 0 and a["assertions_total"] > 0
    assert a["requests"] > 0 and lit["requests"] == 0
    assert a["protocol_fidelity"] == lit["protocol_fidelity"] == "–"  # --no-grader
    assert report["gate"]["exit_code"] == 1 and a["gate"]["exit_code"] == 1
    assert (cmp_dir / "compare.md").read_text().count("\n| ") == 4


AGREE_CASE = {**CASE, "assertions": [
    {"type": "file_exists", "path": "outputs/model.json"},
    "The agent trained on the fixtures/ folder",
    "The skill's configured action names work without modification",
    "The final mIoU is printed",
    "The agent says which runner action it ran"]}
SUGGESTER_MATCH = "You are the SUGGESTER of an aeval run"
MIOU_LINE = "Each action prints a one-line result; training prints the final mIoU."


def suggester(name: str, model: str, level: str, grounded_in: str) -> Script:
    """A grader model's suggester: one fix on SKILL.md line 24, in the tier given."""
    answer = {"suggestions": [{
        "level": level, "grounded_in": grounded_in, "path": "SKILL.md", "start_line": 24,
        "end_line": 24, "original": MIOU_LINE,
        "replacement": MIOU_LINE[:-1] + " and the action it ran.",
        "rationale": "say what ran"}]}
    return Script(name=name, match=SUGGESTER_MATCH, model=model,
                  turns=[Turn(text=json.dumps(answer))])


def test_regrade_every_epoch_with_two_graders_reports_agreement_and_kappa(tmp_path, capsys):
    skill = tmp_path / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    (skill / "eval.config").write_text(json.dumps({"evals": [AGREE_CASE]}))
    store = tmp_path / "s"
    original = {"A1": (True, False), "A2": (True, False), "A3": (True, False),
                "A4": (True, False), "A5": (False, False)}
    with ScriptedModelServer([NO_EXTRA, grader("grader", original), EDITS_SKILL]) as srv:
        assert main(["run", str(skill), "--model", "openai/scripted", "--epochs", "2",
                     "--api-base", srv.base_url_openai, "--out", str(store), "-q"]) == 1
    (source,) = (store / "runs").iterdir()
    # grader A: A3 passed only after a correction (a first-attempt failure), A5 failed;
    # grader B: fails A3 and A4, passes A5. Grader "broken" answers no JSON at all; the
    # provider does not know grader "gone" (HTTP 404, a permanent error: not retried).
    a = grader("grader-a", {"A1": (True, False), "A2": (True, False), "A3": (True, True),
                            "A4": (True, False), "A5": (False, False)})
    b = grader("grader-b", {"A1": (True, False), "A2": (True, False), "A3": (False, False),
                            "A4": (False, False), "A5": (True, False)})
    a.model, b.model = "^grader-a$", "^grader-b$"
    broken = Script(name="broken", match="You are the GRADER", model="^broken$",
                    turns=[Turn(text="I think it all went fine, mostly.")],
                    final="Still no JSON from me.")
    gone = Script(name="gone", match="You are the GRADER", model="^gone$",
                  turns=[Turn(fault=404, fault_times=1000, text="-")])
    scripts = [a, b, broken, gone, suggester("suggest-a", "^grader-a$", "LV1", "train#1:A5"),
               suggester("suggest-b", "^grader-b$", "LV2", "train#1:A4")]
    with ScriptedModelServer(scripts) as srv:
        # two graders could not grade case epochs the original judged: exit 3 (retry), the
        # report of the others is still written
        assert main(["regrade", source.name, "--grader-model", "openai/grader-a",
                     "--grader-model", "openai/grader-b", "--grader-model", "openai/broken",
                     "--grader-model", "openai/gone",
                     "--api-base", srv.base_url_openai, "--out", str(store), "-q"]) == 3
        asked = [r.script for r in srv.requests]
        # replay ran no executor against the model: only the evaluator side was asked
        assert not [r for r in srv.requests if "You are the EXECUTOR" in json.dumps(r.body)]
    # every epoch was graded by every grader
    assert asked.count("grader-a") == asked.count("grader-b") == 2
    assert asked.count("broken") >= 2 and asked.count("gone") >= 2

    (report_path,) = source.glob("regrade-*.json")
    # the replays are runs of their own in the store, but `latest` is still the user's run
    from aeval.run.store import RunStore

    assert len(list((store / "runs").iterdir())) == 5
    assert RunStore(store).resolve("latest") == source
    report = json.loads(report_path.read_text())
    schema = json.loads((ROOT / "eval_skill" / "schemas" / "regrade.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert report["epochs"] == 2 and report["original_grader"] == "openai/scripted"
    assert report["grader_models"] == ["openai/grader-a", "openai/grader-b", "openai/broken",
                                       "openai/gone"]
    # the agreement numbers of tests/unit/test_agreement.py::test_three_raters_by_hand:
    # original P P P F, A P F P F, B P F F P on A2..A5, in each of the two epochs
    overall = report["overall"]
    assert overall["raters"] == ["original", "openai/grader-a", "openai/grader-b"]
    assert (overall["items"], overall["agreements"], overall["rate"]) == (8, 2, 0.25)
    assert overall["method"] == "fleiss" and overall["kappa"] == pytest.approx(-1 / 35, abs=1e-4)
    among = report["among_graders"]
    assert (among["items"], among["rate"], among["method"], among["kappa"]) == (
        8, 0.5, "cohen", 0.0)
    pairs = {tuple(p["raters"]): p for p in report["pairs"]}
    assert {k: (p["rate"], p["kappa"]) for k, p in pairs.items()
            if "openai/broken" not in k and "openai/gone" not in k} \
        == {("original", "openai/grader-a"): (0.75, 0.5),
            ("original", "openai/grader-b"): (0.25, -0.5),
            ("openai/grader-a", "openai/grader-b"): (0.5, 0.0)}
    # the failing graders: an error per case epoch, never a disagreement
    no_json = pairs[("original", "openai/broken")]
    assert no_json["items"] == 0 and no_json["kappa"] is None and no_json["kappa_note"]
    raters = {r["rater"]: r for r in report["raters"]}
    assert [e["epoch"] for e in raters["openai/broken"]["errors"]] == [1, 2]
    assert all("grader answer invalid" in e["reason"] for e in raters["openai/broken"]["errors"])
    assert raters["openai/broken"]["judged"] == raters["openai/gone"]["judged"] == 0
    assert [e["epoch"] for e in raters["openai/gone"]["errors"]] == [1, 2]
    assert all("grader model failed" in e["reason"] and "404" in e["reason"]
               for e in raters["openai/gone"]["errors"])
    assert (raters["openai/grader-a"]["judged"], raters["openai/grader-a"]["passed"]) == (8, 4)
    assert not raters["openai/grader-a"]["errors"] and not raters["original"]["errors"]
    # verdicts identified by skill / runtime / case / epoch / assertion id, every rater listed
    keyed = {(v["skill"], v["runtime"], v["case_id"], v["epoch"], v["assertion_id"]): v
             for v in report["assertions"]}
    a3 = keyed[("segmentation", "builtin", "train", 2, "A3")]
    assert a3["counted"] and a3["agree"] is False
    assert {r: v["verdict"] for r, v in a3["verdicts"].items()} == {
        "original": "passed", "openai/grader-a": "failed", "openai/grader-b": "failed",
        "openai/broken": None, "openai/gone": None}
    assert a3["verdicts"]["openai/grader-b"]["evidence"] == "[seq] evidence for A3"
    s1 = keyed[("segmentation", "builtin", "train", 1, "S1")]
    assert not s1["counted"] and s1["agree"] is True  # the replayed skill edit, for everyone
    assert sorted((d["epoch"], d["assertion_id"]) for d in report["disagreements"]) == [
        (1, "A3"), (1, "A4"), (1, "A5"), (2, "A3"), (2, "A4"), (2, "A5")]
    # causal share per grader: the replayed skill edit and S0's three proven fixes (the
    # documented segment_* actions the runner names train / evaluate / inference: static,
    # no model) are LV1 for all; the graders' own suggestion on SKILL.md line 24 is LV1 for A
    # and LV2 for B
    assert {r: (x["lv1"], x["lv2"], x["causal_share"]) for r, x in raters.items()} == {
        "original": (4, 0, 1.0), "openai/grader-a": (5, 0, 1.0),
        "openai/grader-b": (4, 1, 0.8), "openai/broken": (4, 0, 1.0),
        "openai/gone": (4, 0, 1.0)}
    (tier,) = report["tier_differences"]
    assert (tier["path"], tier["start_line"]) == ("SKILL.md", 24)
    assert tier["levels"] == {"original": [], "openai/grader-a": ["LV1"],
                              "openai/grader-b": ["LV2"], "openai/broken": [],
                              "openai/gone": []}

    out = capsys.readouterr().out
    assert "| all: original, openai/grader-a, openai/grader-b | 8 | 2 | 25% | -0.03 |" in out
    assert "| original vs openai/grader-a | 8 | 6 | 75% | 0.50 | Cohen's kappa |" in out
    assert "error: openai/broken: segmentation/train#2 [builtin]: grader answer invalid" in out
    assert "    openai/grader-b: failed  [seq] evidence for A4" in out
    assert "tiers differ: segmentation SKILL.md:24-24 [builtin]" in out
    # the Prefect table artifacts exist on the test session's server
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    key = f"regrade-{report['regrade_id'].lower()}"
    with get_client(sync_client=True) as client:
        arts = {x.key: x for x in client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[key, f"{key}-raters"])))}
    assert arts[key].type == "table" and arts[f"{key}-raters"].type == "table"
    rows = arts[key].data if isinstance(arts[key].data, list) else json.loads(arts[key].data)
    assert rows[0]["kappa"] == pytest.approx(-1 / 35, abs=1e-4) and rows[0]["assertions"] == 8

    # the replayed case reproduced the recorded skill edit, from its own epoch's recording
    regraded = store / "runs" / report["regrade_runs"][0]
    g = json.loads((regraded / "segmentation" / "replay" / "train" / "epoch-2" / "grading.json")
                   .read_text())
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    same = json.loads((source / "segmentation" / "builtin" / "train" / "epoch-2"
                       / "assertions.json").read_text())
    assert json.loads((regraded / "segmentation" / "replay" / "train" / "epoch-2"
                       / "assertions.json").read_text())["sha256"] == same["sha256"]


def test_regrade_with_one_grader_that_agrees_everywhere_has_no_kappa(tmp_path, capsys):
    """One --grader-model still works on a one-epoch run; when every verdict is `passed`,
    agreement is 100 % and kappa is undefined: null with the reason, not NaN."""
    skill = tmp_path / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    (skill / "eval.config").write_text(json.dumps({"evals": [CASE]}))
    store = tmp_path / "s"
    with ScriptedModelServer([NO_EXTRA, grader("grader", ALL_PASS), EDITS_SKILL]) as srv:
        assert main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"]) == 1
    (source,) = (store / "runs").iterdir()
    with ScriptedModelServer([grader("lenient", ALL_PASS)]) as srv:
        assert main(["regrade", source.name, "--grader-model", "openai/lenient", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"]) == 0
        assert [r.script for r in srv.requests].count("lenient") == 1
    (report_path,) = source.glob("regrade-*.json")
    report = json.loads(report_path.read_text())
    assert report["epochs"] == 1 and report["among_graders"] is None
    overall = report["overall"]
    assert (overall["raters"], overall["items"], overall["rate"], overall["method"]) == (
        ["original", "openai/lenient"], 1, 1.0, "cohen")
    assert overall["kappa"] is None and "chance agreement is 1" in overall["kappa_note"]
    assert report["pairs"] == [overall] and report["disagreements"] == []
    (a3,) = [v for v in report["assertions"] if v["counted"]]
    assert (a3["epoch"], a3["assertion_id"], a3["agree"]) == (None, "A3", True)
    assert "| all: original, openai/lenient | 1 | 1 | 100% | – | every verdict is 'passed'" \
        in capsys.readouterr().out


def test_compare_across_the_four_agent_runtimes_prints_one_row_each(tmp_path, capsys):
    from aeval.adapters import get_runtime
    from aeval.errors import RuntimeUnavailable

    for name in ("claude-code", "codex", "opencode"):
        try:
            get_runtime(name).check_available()
        except RuntimeUnavailable as exc:
            pytest.skip(f"{name} is not installed (bash .ci/install-clis.sh): {exc}")
    skill = tmp_path / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    (skill / "eval.config").write_text(json.dumps({"evals": [
        {**CASE, "assertions": [{"type": "file_exists", "path": "outputs/model.json"}]}]}))
    # every runtime's agent answers at once, without tools: what is compared here is that the
    # same skill runs through each real CLI and lands in its own row
    quiet = Script(name="quiet", match="Train a segmentation model",
                   turns=[Turn(text="I will not run anything.")])
    with ScriptedModelServer([quiet]) as srv:
        code = main(["compare", str(skill), "--runtime", "builtin=openai/scripted",
                     "--runtime", "claude-code=claude-sonnet-4-5", "--runtime",
                     "codex=openai/scripted", "--runtime", "opencode=mock/scripted",
                     "--no-grader", "--api-base", srv.base_url_openai,
                     "--out", str(tmp_path / "s"), "-q"])
        paths = {r.path.split("?")[0] for r in srv.requests}
    assert code == 1  # nobody trained: every row's case fails, so compare exits 1
    assert {"/v1/chat/completions", "/v1/messages", "/v1/responses"} <= paths
    out = capsys.readouterr().out
    labels = [line.split("|")[1].strip() for line in out.splitlines()
              if line.startswith("| ") and not line.startswith("| runtime")]
    assert labels == ["builtin:openai/scripted", "claude-code:claude-sonnet-4-5",
                      "codex:openai/scripted", "opencode:mock/scripted"]
    (cmp_dir,) = (tmp_path / "s" / "compare").iterdir()
    rows = json.loads((cmp_dir / "compare.json").read_text())["rows"]
    assert [r["statuses"] for r in rows] == [{"fail": 1}] * 4  # nobody trained: file missing


def test_regrade_replays_each_of_two_skills_of_one_name_from_its_own_recording(tmp_path,
                                                                                capsys):
    """`skills/csv-report` and `legacy/csv-report` share a name and a case id. Each replay
    must re-emit its own skill's recording (events and outputs) and be graded against its own
    assertions: keyed by name, both replays got the first skill's."""
    mp = tmp_path / "mp"
    for folder, fmt, ext in (("skills", "markdown", "md"), ("legacy", "plain text", "txt")):
        d = mp / folder / "csv-report"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: csv-report\ndescription: Write a {fmt} report of a CSV file. Use "
            f"for CSV reports.\n---\n# CSV report\n\nWrite outputs/report.{ext}.\n")
        (d / "data.csv").write_text("city,population\nOslo,709000\n")
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "report", "prompt": f"Write a {fmt} report of data.csv.",
            "expected_outcome": f"outputs/report.{ext} holds a {fmt} report",
            "files": ["data.csv"], "assertions": [f"The report is {fmt}"]}]}))
    agents = [Script(name=ext, match=f"(?s)EXECUTOR.*Write a {fmt} report", turns=[
        Turn(tool_calls=[ToolCall(name="bash", arguments={
            "command": f"mkdir -p outputs && echo '{fmt} report' > outputs/report.{ext}"})])],
        final="Done.") for fmt, ext in (("markdown", "md"), ("plain text", "txt"))]
    store = tmp_path / "s"
    judge = grader("grader", {"A1": (True, False)})
    with ScriptedModelServer([NO_EXTRA, judge, *agents]) as srv:
        assert main(["run", str(mp), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"]) == 0
        (source,) = (store / "runs").iterdir()
        capsys.readouterr()
        assert main(["regrade", source.name, "--grader-model", "openai/grader-a",
                     "--api-base", srv.base_url_openai, "--out", str(store)]) == 0
    (replay,) = (store / "runs").glob("*-g1-builtin")
    # the progress lines say which grader is at work (the replay's own gate line is not
    # regrade's exit code)
    console = "".join(capsys.readouterr())
    assert f"grader openai/grader-a on {source.name} [builtin] (run {replay.name})" in console
    src = json.loads((source / "run.json").read_text())
    assert sorted(s["path"].split("/")[-2] for s in src["skills"]) == ["legacy", "skills"]
    for s in src["skills"]:
        ext, other = ("txt", "md") if s["path"].split("/")[-2] == "legacy" else ("md", "txt")
        replayed = replay / s["key"] / "replay" / "report"
        assert (replayed / "outputs" / "outputs" / f"report.{ext}").is_file(), s["key"]
        assert not (replayed / "outputs" / "outputs" / f"report.{other}").exists()
        texts = [e["text"] for e in json.loads((replayed / "grading.json").read_text())[
            "expectations"]]
        assert f"The report is {'plain text' if ext == 'txt' else 'markdown'}" in texts


def test_a_grader_whose_provider_fails_mid_run_is_an_error_exit_3(tmp_path, capsys,
                                                                  monkeypatch):
    """The second grader's provider answers 500 to every call: its case epochs are errors
    (never disagreements, never a crash), the first grader's agreement is reported, and the
    exit code says to retry."""
    monkeypatch.setenv("AEVAL_MODEL_RETRIES", "1")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    skill = tmp_path / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    (skill / "eval.config").write_text(json.dumps({"evals": [AGREE_CASE]}))
    store = tmp_path / "s"
    verdicts = {f"A{i}": (True, False) for i in range(1, 6)}
    with ScriptedModelServer([NO_EXTRA, grader("grader", verdicts), EDITS_SKILL]) as srv:
        assert main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"]) == 1
    (source,) = (store / "runs").iterdir()
    ok = grader("grader-ok", verdicts)
    ok.model = "^grader-ok$"
    down = Script(name="down", match="You are the GRADER", model="^grader-down$",
                  turns=[Turn(fault=500, fault_times=100000, text="-")])
    capsys.readouterr()
    with ScriptedModelServer([ok, down]) as srv:
        code = main(["regrade", source.name, "--grader-model", "openai/grader-ok",
                     "--grader-model", "openai/grader-down", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"])
    out = capsys.readouterr().out
    assert code == 3, out
    (report_path,) = source.glob("regrade-*.json")
    report = json.loads(report_path.read_text())
    raters = {r["rater"]: r for r in report["raters"]}
    assert raters["openai/grader-ok"]["judged"] > 0 and not raters["openai/grader-ok"]["errors"]
    assert raters["openai/grader-down"]["errors"]
    assert "exit 3: openai/grader-down could not grade 1 case epoch(s)" in out
