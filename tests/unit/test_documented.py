"""Documented commands: what a skill documents, and which failed calls ran one of them."""

from __future__ import annotations

from textwrap import dedent

import pytest

from aeval.events import EVENT_ADAPTER
from aeval.verdicts.documented import (
    Signature,
    agent_errors,
    documented_signatures,
    failed_documented_calls,
    matches,
    signatures,
)
from tests.conftest import EXAMPLES

SEG = EXAMPLES / "skills" / "segmentation"
FILES = frozenset({"SKILL.md", "scripts/run.py", "fixtures/images/a.txt"})
DOCS = documented_signatures((SEG / "SKILL.md").read_text(), [], FILES)


def test_the_segmentation_skill_documents_its_three_actions():
    assert {(s.file, s.action, s.flags) for s in DOCS} == {
        ("scripts/run.py", a, frozenset({"--data", "--out"}))
        for a in ("segment_train", "segment_evaluate", "segment_inference")}


@pytest.mark.parametrize(("command", "documented"), [
    # how agents actually spell the documented call
    ("python3 .agents/skills/segmentation/scripts/run.py segment_train --data fixtures "
     "--out outputs", True),
    ("cd /tmp/ws && python3 $SKILL_DIR/scripts/run.py segment_train --data=other --out o",
     True),
    ("/bin/bash -lc 'python3 /tmp/a/workspace/.agents/skills/segmentation/scripts/run.py "
     "segment_train --data fixtures --out outputs'", True),
    ("python3 .claude/skills/segmentation/scripts/run.py segment_train --data fixtures", True),
    ("echo start; python3 .agents/skills/segmentation/scripts/run.py segment_train --data x "
     "--out y | tee log.txt", True),
    # improvised: not what the docs say
    ("python3 .agents/skills/segmentation/scripts/run.py", False),
    ("python3 .agents/skills/segmentation/scripts/run.py --help", False),
    ("python3 .agents/skills/segmentation/scripts/run.py train --data fixtures --out o", False),
    ("python3 .agents/skills/segmentation/scripts/run.py segment_train --data f --epochs 3",
     False),
    ("cat .agents/skills/segmentation/SKILL.md", False),
    ("grep -n segment_train .agents/skills/segmentation/scripts/run.py", False),
    ("python3 runner.py segment_train --data fixtures --out outputs", False),
])
def test_a_call_runs_a_documented_command(command, documented):
    found = [matches(s, DOCS) for s in signatures(command, FILES)]
    assert any(found) is documented, signatures(command, FILES)


def _events(*pairs):
    out, seq = [], 0
    for i, (command, exit_code) in enumerate(pairs):
        out.append(EVENT_ADAPTER.validate_python({
            "seq": seq, "t": 0, "kind": "tool_call", "call_id": f"c{i}", "tool": "bash",
            "input": {"command": command}}))
        out.append(EVENT_ADAPTER.validate_python({
            "seq": seq + 1, "t": 0, "kind": "tool_result", "call_id": f"c{i}", "tool": "bash",
            "ok": exit_code == 0, "exit_code": exit_code,
            "output": "KeyError: 'segment_train'" if exit_code else "ok"}))
        seq += 2
    return out


def test_a_workaround_without_an_edit_is_found():
    """The agent runs the documented action, it fails, the agent calls `train` instead and
    succeeds: the documented command's failure is the first-attempt evidence."""
    run = ".agents/skills/segmentation/scripts/run.py"
    events = _events(
        (f"python3 {run} --help", 0),
        (f"python3 {run} segment_train --data fixtures --out outputs", 1),
        (f"python3 {run} train --data fixtures --out outputs", 0))
    (f,) = failed_documented_calls(events, DOCS, FILES)
    assert (f.seq, f.call_seq, f.exit_code) == (3, 2, 1)
    assert f.signature == "scripts/run.py segment_train --data --out"
    assert "KeyError" in f.excerpt


def test_failed_improvised_calls_are_not_documented_failures():
    run = ".agents/skills/segmentation/scripts/run.py"
    events = _events((f"python3 {run}", 2), (f"python3 {run} train --data f --out o", 1),
                     ("grep -rn segment_train .agents/skills", 1))
    assert failed_documented_calls(events, DOCS, FILES) == []


def test_a_skill_that_documents_no_script_has_nothing_to_check():
    docs = documented_signatures("# Notes\nRun `ls -la` and `git status`.\n", [], FILES)
    assert docs == []
    assert failed_documented_calls(_events(("ls -la nothere", 2)), docs, FILES) == []


def test_contract_steps_are_documented_too():
    docs = documented_signatures("# x\n", ["python3 $SKILL_DIR/scripts/run.py train --data d"],
                                 FILES)
    assert docs == [Signature("scripts/run.py", "train", frozenset({"--data"}))]


def test_unbalanced_quotes_do_not_crash():
    assert signatures("python3 scripts/run.py segment_train 'oops", FILES)


def _refused(seq: int, tool: str, command: str, refused: str, output: str) -> list:
    return [EVENT_ADAPTER.validate_python({
                "seq": seq, "t": 0, "kind": "tool_call", "call_id": f"r{seq}", "tool": tool,
                "input": {"command": command}}),
            EVENT_ADAPTER.validate_python({
                "seq": seq + 1, "t": 0, "kind": "tool_result", "call_id": f"r{seq}",
                "tool": tool, "ok": False, "output": output, "refused": refused})]


TRAIN = "scripts/run.py segment_train --data fixtures --out outputs"
OPENCODE_ROOTS = ("/tmp/a/workspace/.opencode/skills/segmentation",
                  ".opencode/skills/segmentation")


def test_a_documented_command_the_runtime_never_ran_is_the_agents_error_not_the_skills():
    """The scripted agent written for builtin calls `bash` under Claude Code, which has only
    `Bash`: the documented command never ran, so it says nothing about the skill."""
    events = _refused(0, "bash", f"python3 .claude/skills/segmentation/{TRAIN}",
                      "unknown_tool", "<tool_use_error>Error: No such tool available: bash")
    roots = ("/tmp/a/workspace/.claude/skills/segmentation", ".claude/skills/segmentation")
    assert failed_documented_calls(events, DOCS, FILES, roots) == []
    assert "refused by the runtime" in agent_errors(events, FILES, roots)[1]


def test_a_path_in_another_runtimes_skill_folder_did_not_reach_the_skill():
    """Under OpenCode the copy is at .opencode/skills/: a command naming .agents/skills/
    fails with "can't open file", which is the agent's path, not a documented command that
    the skill rejected. The same command at the right folder still counts."""
    wrong = _events((f"python3 .agents/skills/segmentation/{TRAIN}", 2))
    assert failed_documented_calls(wrong, DOCS, FILES, OPENCODE_ROOTS) == []
    why = agent_errors(wrong, FILES, OPENCODE_ROOTS)[1]
    assert ".agents/skills/segmentation/scripts/run.py" in why
    assert ".opencode/skills/segmentation/" in why
    for command in (f"python3 .opencode/skills/segmentation/{TRAIN}",
                    f"python3 /elsewhere/ws/.opencode/skills/segmentation/{TRAIN}",
                    f"cd .opencode && python3 skills/segmentation/{TRAIN}",
                    f"cd .opencode/skills/segmentation && python3 {TRAIN}",
                    f"python3 $SKILL_DIR/{TRAIN}", f"python3 ${{SKILL_DIR}}/{TRAIN}"):
        right = _events((command, 1))
        assert len(failed_documented_calls(right, DOCS, FILES, OPENCODE_ROOTS)) == 1, command
        assert agent_errors(right, FILES, OPENCODE_ROOTS) == {}, command


RUN = ".agents/skills/segmentation/scripts/run.py"


@pytest.mark.parametrize(("command", "documented"), [
    # how agents wrap or prefix the documented call: the wrapper is not the command
    (f"timeout 60 python3 {RUN} segment_train --data fixtures --out outputs", True),
    (f"timeout -k 5 600s python3 {RUN} segment_train --data fixtures", True),
    (f"FOO=1 python3 {RUN} segment_train --data fixtures --out outputs", True),
    (f"CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 python3 -u {RUN} segment_evaluate --data d",
     True),
    (f"env FOO=1 python3 {RUN} segment_train --data fixtures", True),
    (f"env -u HF_TOKEN FOO=1 python3 {RUN} segment_train --data fixtures", True),
    (f"nice -n 10 python3 {RUN} segment_inference --data d --out o", True),
    (f"nice -n 19 timeout 60 env A=1 python3 {RUN} segment_train --data f", True),
    (f"exec python3 {RUN} segment_train --data fixtures", True),
    (f"command python3 {RUN} segment_train --data fixtures", True),
    (f"time python3 {RUN} segment_train --data fixtures", True),
    (f"uv run python3 {RUN} segment_train --data fixtures", True),
    # pipelines and lists: each simple command on its own
    (f"python3 {RUN} segment_train --data fixtures 2>&1 | tee train.log", True),
    (f"mkdir -p outputs && timeout 60 python3 {RUN} segment_train --data f --out outputs "
     "|| echo failed", True),
    (f"(cd /tmp/ws && FOO=1 exec python3 {RUN} segment_train --data fixtures)", True),
    # a shell given the command as a string
    (f"bash -c 'timeout 60 python3 {RUN} segment_train --data fixtures'", True),
    (f"sh -c \"cd /tmp/ws && FOO=1 python3 {RUN} segment_train --data fixtures\"", True),
    (f"bash -o pipefail -c 'python3 {RUN} segment_train --data f | tee log.txt'", True),
    (f"/bin/bash --norc -ec 'env A=1 python3 {RUN} segment_train --data f'", True),
    (f"timeout 900 bash -lc \"sh -c 'python3 {RUN} segment_train --data f'\"", True),
    # wrapped, but not what the docs say, or not run at all
    (f"timeout 60 python3 {RUN} train --data fixtures", False),
    (f"env FOO=1 python3 {RUN} segment_train --epochs 3", False),
    (f"timeout 5 cat {RUN}", False),
    (f"command -v {RUN}", False),
    (f"python3 -m py_compile {RUN}", False),
    (f"bash -c 'grep -n segment_train {RUN}'", False),
    (f"bash --norc {RUN}.bak segment_train --data f", False),
])
def test_a_wrapped_or_prefixed_call_runs_a_documented_command(command, documented):
    found = [matches(s, DOCS) for s in signatures(command, FILES)]
    assert any(found) is documented, signatures(command, FILES)


def test_a_file_named_as_an_argument_was_not_run():
    """`cat` or `shellcheck` reads the documented script: that is not running it."""
    files = FILES | {"scripts/fetch.sh"}
    docs = documented_signatures("```bash\n$SKILL_DIR/scripts/fetch.sh --since 2024-01-01\n```",
                                 [], files)
    assert docs == [Signature("scripts/fetch.sh", None, frozenset({"--since"}))]
    for command in ("cat scripts/fetch.sh", "shellcheck scripts/fetch.sh",
                    "cp scripts/fetch.sh /tmp/x.sh", "ls -l ./scripts/fetch.sh --since",
                    "less -N scripts/fetch.sh"):
        assert signatures(command, files) == [], command
    for command in ("./scripts/fetch.sh --since 2024-02-01", "bash scripts/fetch.sh --since x",
                    "timeout 30 ./scripts/fetch.sh"):
        assert [s for s in signatures(command, files) if matches(s, docs)], command


def test_a_wrapped_documented_command_that_fails_is_found_and_one_that_works_is_not():
    """The false green of wrapped calls: `timeout 60 python3 scripts/run.py ...` failed, and
    S2 must see it. The same call succeeding says nothing against the skill."""
    command = f"timeout 60 env FOO=1 python3 {RUN} segment_train --data fixtures --out o"
    (f,) = failed_documented_calls(_events((command, 1)), DOCS, FILES)
    assert (f.seq, f.signature) == (1, "scripts/run.py segment_train --data --out")
    assert failed_documented_calls(_events((command, 0)), DOCS, FILES) == []


def test_only_failed_calls_count_and_each_failed_call_once():
    """Successful documented calls are no evidence; a failed call that runs two documented
    commands is one failure."""
    twice = (f"python3 {RUN} segment_train --data f && python3 {RUN} segment_evaluate "
             "--data f")
    events = _events((f"python3 {RUN} segment_train --data f", 0), (twice, 1),
                     ("ls nothere", 2))
    (f,) = failed_documented_calls(events, DOCS, FILES)
    assert f.seq == 3 and f.command == twice


def test_the_skills_files_are_its_regular_files_without_caches_or_links(tmp_path):
    from aeval.verdicts.documented import skill_files

    for rel in ("SKILL.md", "scripts/run.py", "scripts/__pycache__/run.cpython-311.pyc",
                ".git/HEAD", "web/node_modules/x/index.js", "web/app.js"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "scripts" / "latest.py").symlink_to("run.py")
    assert skill_files(tmp_path) == {"SKILL.md", "scripts/run.py", "web/app.js"}
    assert len(skill_files(tmp_path, limit=2)) == 2


def test_what_a_skill_documents_blocks_console_sessions_inline_spans_and_steps():
    from aeval.verdicts.documented import documented_commands

    md = dedent("""\
        # Seg
        Run `scripts/run.py segment_train --data d` or read `scripts/run.py`.

        ```console
        $ python3 scripts/run.py segment_evaluate --data d
        mIoU 0.71
        ```

        ```python
        import run
        ```
        """)
    assert documented_commands(md, ["python3 scripts/run.py x"]) == [
        "python3 scripts/run.py segment_evaluate --data d\nmIoU 0.71",
        "scripts/run.py segment_train --data d", "python3 scripts/run.py x"]


def test_a_command_given_as_an_argument_list_is_read_too():
    """Codex hands `exec_command` an argv list, not a string."""
    events = [EVENT_ADAPTER.validate_python({
                  "seq": 0, "t": 0, "kind": "tool_call", "call_id": "c0", "tool": "exec_command",
                  "input": {"cmd": ["bash", "-lc", f"python3 {RUN} segment_train --data f"]}}),
              EVENT_ADAPTER.validate_python({
                  "seq": 1, "t": 0, "kind": "tool_result", "call_id": "c0",
                  "tool": "exec_command", "ok": False, "exit_code": 1, "output": "KeyError"})]
    (f,) = failed_documented_calls(events, DOCS, FILES)
    assert f.command == f"bash -lc 'python3 {RUN} segment_train --data f'"
    assert f.excerpt == "KeyError" and f.exit_code == 1


def test_the_signature_reads_action_and_flags():
    (sig,) = signatures(f"python3 {RUN} segment_train --data=x -v --out o -- extra", FILES)
    assert sig == Signature("scripts/run.py", "segment_train",
                            frozenset({"--data", "-v", "--out"}))
    assert str(sig) == "scripts/run.py segment_train --data --out -v"
    (bare,) = signatures(f"python3 {RUN} ./data --out o", FILES)
    assert bare.action is None and str(bare) == "scripts/run.py --out"
    (odd,) = signatures(f"{RUN} 9lives", FILES | {"x"})
    assert odd.action is None
    assert signatures("python3 $SKILL_DIR/README.md", FILES | {"README.md"}) == []
    assert signatures("python3 ${SKILL_DIR}/scripts/run.py go", FILES) == [
        Signature("scripts/run.py", "go", frozenset())]


@pytest.mark.parametrize(("command", "found"), [
    (f"bash -O extglob -c 'python3 {RUN} segment_train --data f'", True),
    (f"bash +o posix -ec 'python3 {RUN} segment_train --data f'", True),
    (f"bash -x -c 'python3 {RUN} segment_train --data f'", True),
    ("bash -c", False),  # no code given
    (f"bash --rcfile x -- {RUN} segment_train", False),
    (f"bash -c \"sh -c 'bash -c \\\"python3 {RUN} segment_train --data f\\\"'\"", True),
])
def test_the_shells_options_before_its_code(command, found):
    assert bool([s for s in signatures(command, FILES) if matches(s, DOCS)]) is found, command


def test_every_documented_command_of_a_call_is_read():
    sigs = signatures(f"python3 {RUN} segment_train --data f; bash -c 'python3 {RUN} "
                      f"segment_evaluate --data f'; python3 {RUN} segment_inference -", FILES)
    assert [(s.action, s.flags) for s in sigs] == [
        ("segment_train", frozenset({"--data"})), ("segment_evaluate", frozenset({"--data"})),
        ("segment_inference", frozenset())]  # a lone `-` (stdin) is no flag
    (sig,) = signatures(f"python3 {RUN} segment_train --data=a=b", FILES)
    assert sig.flags == {"--data"}


def test_a_linked_folder_inside_the_skill_is_not_walked(tmp_path):
    from aeval.verdicts.documented import skill_files

    (tmp_path / "skill" / "scripts").mkdir(parents=True)
    (tmp_path / "skill" / "scripts" / "run.py").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.py").write_text("x")
    (tmp_path / "skill" / "linked").symlink_to(tmp_path / "elsewhere")
    assert skill_files(tmp_path / "skill") == {"scripts/run.py"}


def test_unlabelled_and_terminal_fences_and_two_word_spans_are_documented():
    from aeval.verdicts.documented import documented_commands

    md = ("# x\n\n```\nscripts/a.sh go\n```\n\n```terminal\n$ scripts/b.sh go\n```\n\n"
          "Run `b.sh x`.\n")
    assert documented_commands(md, []) == ["scripts/a.sh go", "scripts/b.sh go", "b.sh x"]


def test_failures_are_read_past_refused_calls_and_results_without_a_call():
    refused = _refused(10, "bash", f"python3 {RUN} segment_train --data f", "unknown_tool",
                       "no such tool")
    orphan = [EVENT_ADAPTER.validate_python({
        "seq": 20, "t": 0, "kind": "tool_result", "call_id": "nobody", "tool": "bash",
        "ok": False, "exit_code": 1, "output": "x"})]
    long_command = f"python3 {RUN} segment_train --data " + "d" * 400
    failing = _events((long_command, 1))
    failing[1].output = "line\n" * 200
    (f,) = failed_documented_calls([*refused, *orphan, *failing], DOCS, FILES)
    assert f.seq == 1 and f.command == long_command[:300] and len(f.excerpt) == 400
    errors = agent_errors([*refused, *_events((f"python3 .agents/skills/segmentation/{TRAIN}",
                                               2))], FILES, (".opencode/skills/segmentation",))
    assert errors[11].startswith("refused by the runtime")
    assert errors[1] == ("names .agents/skills/segmentation/scripts/run.py, not in this "
                         "runtime's skill copy (.opencode/skills/segmentation/): the agent's "
                         "path, the skill never ran")


def test_the_skill_folders_other_spellings_name_the_copy_and_documented_commands():
    """Claude Code's ``${CLAUDE_SKILL_DIR}`` and ``{baseDir}`` are the copy, wherever it is:
    a failed call through them ran the documented command, and is not the agent's path."""
    for command in (f"python3 ${{CLAUDE_SKILL_DIR}}/{TRAIN}", f"python3 $CLAUDE_SKILL_DIR/{TRAIN}",
                    f"python3 {{baseDir}}/{TRAIN}"):
        calls = _events((command, 1))
        assert agent_errors(calls, FILES, OPENCODE_ROOTS) == {}, command
        assert len(failed_documented_calls(calls, DOCS, FILES, OPENCODE_ROOTS)) == 1, command
    md = dedent("""\
        ---
        name: segmentation
        description: Segment images.
        ---
        ```bash
        python3 ${CLAUDE_SKILL_DIR}/scripts/run.py segment_train --data fixtures --epochs 2
        ```
        """)
    (sig,) = documented_signatures(md, [], FILES)
    assert (sig.file, sig.action, sig.flags) == ("scripts/run.py", "segment_train",
                                                 frozenset({"--data", "--epochs"}))
