"""The pure parts of resource coverage and trigger accuracy: path attribution from tool inputs,
the read / executed / written rule, skill loads from events, precision and recall."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aeval.artifacts import TriggerTrial
from aeval.events import ToolCallEvent
from aeval.skill.contract import ContractError, generic_config, parse_config
from aeval.skill.skill_md import load_skill
from aeval.stats.triggers import outcome, precision_recall, score_trials, skill_loads
from aeval.verdicts.coverage import (
    command_uses,
    resource_use,
    skill_coverage,
    skill_files,
    skill_relative,
    uses_from_events,
)


@pytest.fixture
def ws(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "workspace"
    skill = workspace / ".agents" / "skills" / "csv-stats"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: csv-stats\ndescription: Stats.\n---\n")
    (skill / "scripts" / "stats.py").write_text("print(1)\n")
    (skill / "reference.md").write_text("ref\n")
    return workspace, skill


def call(seq: int, tool: str, **inp) -> ToolCallEvent:
    return ToolCallEvent(seq=seq, t=0.0, call_id=f"c{seq}", tool=tool, input=inp)


# ---- path attribution ------------------------------------------------------------------------


def test_coverage_counts_what_the_skill_ships_not_what_it_installed(tmp_path):
    """A vendor skill with its node_modules and a .venv beside its script: the coverage table
    (benchmark.json, the MR note, the Prefect artifact) lists the skill's own files, not
    thousands of dependencies as untouched."""
    skill = tmp_path / "pdf-forms"
    for rel, text in {
        "SKILL.md": "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n"
                    "Run `node scripts/fill.js form.pdf`.\n",
        "scripts/fill.js": "const { PDFDocument } = require('pdf-lib');\n",
        "reference/fields.md": "# Field names\n",
        "node_modules/pdf-lib/package.json": '{"name": "pdf-lib"}\n',
        "node_modules/pdf-lib/cjs/index.js": "module.exports = {};\n",
        ".venv/lib/python3.11/site-packages/pypdf/__init__.py": "",
        "scripts/__pycache__/x.cpython-311.pyc": "",
    }.items():
        (skill / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill / rel).write_text(text)
    files = skill_files(skill)
    assert files == ["SKILL.md", "reference/fields.md", "scripts/fill.js"]
    cov = skill_coverage(files, [])
    assert cov.untouched == files


def test_relative_absolute_and_skill_dir_paths_are_attributed(ws):
    workspace, skill = ws
    assert skill_relative(".agents/skills/csv-stats/SKILL.md", workspace, skill) == "SKILL.md"
    assert skill_relative(str(skill / "scripts/stats.py"), workspace, skill) == "scripts/stats.py"
    assert skill_relative("$SKILL_DIR/reference.md", workspace, skill) == "reference.md"
    assert skill_relative("${SKILL_DIR}/scripts/../reference.md", workspace, skill) == \
        "reference.md"


def test_paths_outside_the_skill_copy_are_ignored(ws, tmp_path):
    workspace, skill = ws
    assert skill_relative("outputs/stats.json", workspace, skill) is None
    assert skill_relative("/etc/passwd", workspace, skill) is None
    assert skill_relative(".agents/skills/csv-stats-other/SKILL.md", workspace, skill) is None
    assert skill_relative(".agents/skills/csv-stats/../x/SKILL.md", workspace, skill) is None
    assert skill_relative(".agents/skills/csv-stats", workspace, skill) is None  # the folder


def test_symlinked_paths_reach_the_skill_copy(ws):
    workspace, skill = ws
    os.symlink(skill, workspace / "s")
    os.symlink(skill / "reference.md", workspace / "ref-link.md")
    assert skill_relative("s/scripts/stats.py", workspace, skill) == "scripts/stats.py"
    assert skill_relative("ref-link.md", workspace, skill) == "reference.md"


def test_bash_rule_executed_read_written(ws):
    workspace, skill = ws
    uses = command_uses(
        "cd x; python3 -u $SKILL_DIR/scripts/stats.py data.csv --config=$SKILL_DIR/reference.md"
        " && cat .agents/skills/csv-stats/SKILL.md | head > out.txt; "
        "echo hi >> $SKILL_DIR/notes.txt; $SKILL_DIR/scripts/stats.py | tee $SKILL_DIR/log",
        workspace, skill)
    # after `cd x`, `.agents/skills/csv-stats/SKILL.md` is x's, not the skill copy's
    assert uses == [("scripts/stats.py", "executed"), ("reference.md", "read"),
                    ("notes.txt", "written"), ("scripts/stats.py", "executed"),
                    ("log", "written")]
    # python -m / -c take no script file: a skill path after them is an argument
    assert command_uses("python3 -m json.tool $SKILL_DIR/reference.md", workspace, skill) == \
        [("reference.md", "read")]
    # a command shlex cannot split is split on whitespace: the path it names still counts
    assert command_uses("echo 'unclosed $SKILL_DIR/SKILL.md", workspace, skill) == \
        [("SKILL.md", "read")]


def test_relative_paths_after_a_cd_are_taken_from_where_it_went(ws):
    workspace, skill = ws
    assert command_uses('cd "$SKILL_DIR" && python3 scripts/stats.py "$OLDPWD/data.csv"',
                        workspace,
                        skill) == [("scripts/stats.py", "executed")]
    assert command_uses("cd .agents/skills/csv-stats/scripts && cat ../SKILL.md && "
                        "./stats.py", workspace, skill) == [("SKILL.md", "read"),
                                                            ("scripts/stats.py", "executed")]
    # a subshell's cd ends with it; `cd -P DIR` takes its option
    assert command_uses("(cd -P $SKILL_DIR && cat SKILL.md); cat reference.md", workspace,
                        skill) == [("SKILL.md", "read")]
    # a cd whose target cannot be told (another variable) falls back to the workspace root
    assert command_uses('cd "$OLDPWD"; cat .agents/skills/csv-stats/reference.md',
                        workspace, skill) == [("reference.md", "read")]


def test_file_tools_and_watch_join_per_file(ws):
    workspace, skill = ws
    events = [call(0, "read_file", path=".agents/skills/csv-stats/SKILL.md"),
              call(1, "bash", command="python3 .agents/skills/csv-stats/scripts/stats.py"),
              call(2, "edit_file", file_path=str(skill / "reference.md"), old_text="a"),
              call(3, "read_file", filePath="outputs/x.json")]
    uses = uses_from_events(events, workspace, skill)
    files = ["SKILL.md", "reference.md", "scripts/stats.py", "unused.md"]
    got = resource_use(uses, [("scripts/stats.py", "opened"), ("SKILL.md", "accessed"),
                              ("scripts", "opened"), ("gone.md", "written")], files,
                       watched=True)
    assert got.read == ["SKILL.md"]  # stats.py was opened by python: executed, not also read
    assert got.executed == ["scripts/stats.py"] and got.written == ["reference.md"]
    assert "unused.md" not in got.touched() and got.watched


# ---- trigger loads ---------------------------------------------------------------------------


def test_skill_loads_from_file_tools_bash_and_skill_tools(ws):
    workspace, skill = ws
    other = skill.parent / "release-notes"
    other.mkdir()
    skills = {"csv-stats": skill, "release-notes": other}
    events = [call(0, "list_dir", path=".agents/skills"),
              call(1, "read_file", path=".agents/skills/csv-stats/reference.md"),  # not a load
              call(2, "bash", command="cat .agents/skills/release-notes/SKILL.md"),
              call(3, "Skill", skill="csv-stats"),
              call(4, "skill", name="Release-Notes"),
              call(5, "read_file", file_path=str(skill / "SKILL.md"))]
    loads = skill_loads(events, workspace, skills)
    assert [(ld.skill, ld.seq) for ld in loads] == [
        ("release-notes", 2), ("csv-stats", 3), ("release-notes", 4), ("csv-stats", 5)]
    assert loads[1].how == "Skill tool"


def test_bash_c_runs_the_script_it_is_given(ws):
    """An agent that wraps a command in `bash -lc '<the command>'` (as Codex reports its own,
    when the adapter has not unwrapped it) ran the command inside: read as a plain argument,
    the skill files it names were missed and the skill never counted as loaded."""
    workspace, skill = ws
    assert command_uses("/bin/bash -lc 'cat .agents/skills/csv-stats/SKILL.md'", workspace,
                        skill) == [("SKILL.md", "read")]
    assert command_uses("bash -c \"cd .agents/skills/csv-stats && python3 scripts/stats.py\"",
                        workspace, skill) == [("scripts/stats.py", "executed")]
    events = [call(0, "bash", command="/bin/bash -lc 'sed -n 1,80p "
                                      ".agents/skills/csv-stats/SKILL.md'")]
    assert [ld.skill for ld in skill_loads(events, workspace, {"csv-stats": skill})] == [
        "csv-stats"]


def test_skill_dir_names_only_the_skill_it_points_to(ws):
    """In a trial `$SKILL_DIR` is the skill under test's copy: `cat "$SKILL_DIR/SKILL.md"`
    loads that skill, not every distractor installed beside it; a `cd` into a distractor's
    folder then `cat SKILL.md` loads the distractor."""
    workspace, skill = ws
    other = skill.parent / "release-notes"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: release-notes\ndescription: Notes.\n---\n")
    skills = {"csv-stats": skill, "release-notes": other}
    events = [call(0, "bash", command='cat "$SKILL_DIR/SKILL.md"'),
              call(1, "bash", command="cd .agents/skills/release-notes && cat SKILL.md"),
              call(2, "read_file", path="$SKILL_DIR/SKILL.md")]
    loads = skill_loads(events, workspace, skills, skill_var=skill)
    assert [(ld.skill, ld.seq) for ld in loads] == [
        ("csv-stats", 0), ("release-notes", 1), ("csv-stats", 2)]


# ---- precision and recall --------------------------------------------------------------------


def test_precision_and_recall_with_zero_denominators():
    assert precision_recall(0, 0, 0) == (None, None)
    assert precision_recall(0, 0, 2) == (None, 0.0)  # never loaded: precision undefined
    assert precision_recall(0, 3, 0) == (0.0, None)  # only false triggers, no should-prompts
    assert precision_recall(2, 1, 1) == (0.6667, 0.6667)


def test_score_counts_outcomes_and_distractor_picks():
    def trial(kind, loaded_this, loaded=()):
        return TriggerTrial(kind=kind, index=0, prompt="p", dir="d",
                            outcome=outcome(kind, loaded_this), loaded=list(loaded))

    trials = [trial("should", True, ["x"]), trial("should", False, ["pdf", "pdf"]),
              trial("should", False), trial("should_not", True, ["x"]),
              trial("should_not", False, ["pdf"]), trial("should", None)]
    s = score_trials("x", "builtin", "contract", ["pdf"], trials)
    assert (s.tp, s.fn, s.fp, s.tn, s.errors) == (1, 2, 1, 1, 1)
    assert s.precision == 0.5 and s.recall == 0.3333
    assert s.distractor_picks == {"pdf": 1}


# ---- the contract ----------------------------------------------------------------------------


def test_generic_tier_derives_one_should_prompt(ws):
    _, skill = ws
    config = generic_config(load_skill(skill))
    assert config.triggers is not None and config.triggers.should == [
        "I need help with this: Stats."] and config.triggers.should_not == []


@pytest.mark.parametrize(("triggers", "message"), [
    ({"should": ["a", " a "]}, "eval.config:triggers.should: prompt [1] is a duplicate: 'a'"),
    ({"should_not": ["  "]}, "eval.config:triggers.should_not: prompt [0] is blank"),
    ({"should": [""]}, "eval.config:triggers.should[0]: String should have at least 1 "
                       "character"),
    ({"should": ["a"], "should_not": ["a"]},
     "eval.config:triggers: prompt in both should and should_not: 'a'"),
    ({"shuold": ["a"]}, "eval.config:triggers.shuold: unknown field"),
    # declared but empty: `aeval triggers` would run nothing and exit 0 with an empty table
    ({"should": []}, "eval.config:triggers: no prompt in should or should_not (leave "
                     "triggers out to derive a should-prompt from the description)"),
])
def test_bad_triggers_are_one_clear_line(tmp_path, triggers, message):
    import json

    path = tmp_path / "eval.config"
    path.write_text(json.dumps({"evals": [{"id": "a", "prompt": "p", "expected_outcome": "o"}],
                                "triggers": triggers}))
    with pytest.raises(ContractError) as exc:
        parse_config(path)
    (problem,) = exc.value.problems
    assert str(problem).replace(str(tmp_path) + "/", "") == message


# ---- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--runtime", "literal", "--model", "openai/x"],
                                   ["--model", "openai/x", "--distractors", "/nonexistent"]])
def test_triggers_usage_errors_exit_2_before_anything_runs(ws, extra, capsys):
    from aeval.deployments.cli.main import main

    _, skill = ws
    assert main(["triggers", str(skill), *extra]) == 2
    err = capsys.readouterr().err
    assert "needs an agent runtime" in err or "/nonexistent: no such file" in err


# ---- distractors -----------------------------------------------------------------------------


def _skill(root: Path, name: str, folder: str | None = None) -> Path:
    d = root / (folder or name)
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Does {name} things.\n---\n")
    return d


def test_distractors_marketplace_topped_up_dir_and_no_clashes(tmp_path):
    from aeval.tasks.run.examine import examine
    from aeval.tasks.studies.triggers import choose_distractors

    skills = tmp_path / "skills"
    me = _skill(skills, "csv-stats")
    _skill(skills, "release-notes")
    ex = examine(me)
    chosen, source = choose_distractors(ex, [me], None)
    names = [load_skill(d).name for d in chosen]
    assert source == "marketplace+bundled" and names[0] == "release-notes"
    assert "spreadsheet-cleanup" in names and "csv-stats" not in names
    assert len({d.name for d in chosen}) == len(chosen)  # one folder per copy

    other = tmp_path / "other"
    _skill(other, "pdf-tools")
    _skill(other, "csv-stats-v2", folder="csv-stats")  # its copy would land on the skill's
    _skill(other, "csv-stats", folder="csv-stats-old")  # the same name as the skill
    chosen, source = choose_distractors(ex, [me], other)
    assert source == str(other) and [d.name for d in chosen] == ["pdf-tools"]


def test_an_invalid_skill_is_listed_and_the_others_are_planned(tmp_path):
    import json
    import shutil

    from aeval.stats.triggers import TriggersRequest
    from aeval.tasks.studies.triggers import prepare_triggers

    good = _skill(tmp_path / "skills", "csv-stats")
    (good / "eval.config").write_text(json.dumps({
        "evals": [{"id": "a", "prompt": "p", "expected_outcome": "o"}],
        "triggers": {"should": ["Profile data.csv", "Describe table.csv"],
                     "should_not": ["Resize logo.png"]}}))
    bad = _skill(tmp_path / "skills", "broken")
    (bad / "eval.config").write_text('{"evals": [], "triggers": {"should": [1]}}')
    prepared = prepare_triggers(TriggersRequest(
        skill_roots=[str(good), str(bad)], runtimes=["builtin", "opencode"], model="m",
        store=str(tmp_path / "store"), run_id="r1", epochs=2))
    try:
        (line,) = prepared.invalid
        assert "broken/eval.config:evals: List should have at least 1 item" in line
        assert len(prepared.trials) == 3 * 2 * 2  # prompts x runtimes x epochs
        kinds = sorted({(t.kind, t.plan.case.id) for t in prepared.trials})
        assert kinds == [("should", "should-1"), ("should", "should-2"),
                         ("should_not", "should_not-1")]
        plan = prepared.trials[0].plan
        assert plan.run.executor_prompt == "trigger_executor" and plan.case.max_turns == 3
        assert prepared.distractors == {"csv-stats": [load_skill(d).name
                                                      for d in plan.skill.distractors]}
    finally:
        shutil.rmtree(prepared.workspace_root, ignore_errors=True)


@pytest.mark.parametrize("command", [
    "python3 {baseDir}/scripts/stats.py data.csv",
    'python3 "${CLAUDE_SKILL_DIR}/scripts/stats.py" data.csv',
    "python3 $CLAUDE_SKILL_DIR/scripts/stats.py data.csv",
    "python3 /mnt/skills/user/csv-stats/scripts/stats.py data.csv",
    "cd /mnt/skills/public/csv-stats && python3 scripts/stats.py data.csv",
])
def test_every_spelling_of_the_skill_folder_is_the_copy(ws, command):
    workspace, skill = ws
    assert command_uses(command, workspace, skill)[0] == ("scripts/stats.py", "executed")
    if "/mnt/" in command:  # another skill's install path is not this copy
        assert command_uses(command.replace("csv-stats", "pdf"), workspace, skill) == []


def test_a_load_through_the_install_path_is_that_skills_load(ws):
    """claude.ai's install path names the skill by its folder: `/mnt/skills/user/<name>/`
    loads <name>, whichever skill is under test; `{baseDir}` is the one under test."""
    workspace, skill = ws
    other = skill.parent / "release-notes"
    other.mkdir()
    skills = {"csv-stats": skill, "release-notes": other}
    events = [call(0, "bash", command="cat /mnt/skills/user/release-notes/SKILL.md"),
              call(1, "read_file", path="/mnt/skills/public/csv-stats/SKILL.md"),
              call(2, "bash", command="head -40 {baseDir}/SKILL.md"),
              call(3, "bash", command="cat /mnt/skills/user/docx/SKILL.md")]
    loads = skill_loads(events, workspace, skills, skill_var=skill)
    assert [(ld.skill, ld.seq) for ld in loads] == [
        ("release-notes", 0), ("csv-stats", 1), ("csv-stats", 2)]
