"""What a documented block reads, writes, sets and runs (aeval.skill.shellparse), without running
it."""

from __future__ import annotations

from textwrap import dedent

import pytest

from aeval.skill.shellparse import commands, effects, path_like, related


def test_here_document_bodies_are_data_not_commands():
    code = dedent("""\
        cat > config.json <<'EOF'
        rm -rf ~/.ssh
        {"out": "build/report.md"}
        EOF
        python3 scripts/render.py config.json""")
    cmds = commands(code)
    assert [c.argv[0] for c in cmds] == ["cat", "python3"]
    assert cmds[0].writes == ["config.json"] and cmds[1].line == 4


@pytest.mark.parametrize("code, script, args", [
    ("python3 -u scripts/x.py train --data d", "scripts/x.py", ["train", "--data", "d"]),
    ("timeout 60 env FOO=1 nice -n 5 ./run.sh start", "./run.sh", ["start"]),
    ("uv run scripts/x.py", "scripts/x.py", []),
    ("$SKILL_DIR/bin/tool --help", "$SKILL_DIR/bin/tool", ["--help"]),
    ("python3 -m http.server 8000", None, []),
    ("npm test", None, []),
])
def test_the_file_a_command_runs(code, script, args):
    (cmd,) = commands(code)
    assert cmd.script() == (script, args)


def test_effects_of_a_realistic_block():
    eff = effects(dedent("""\
        export OUT_DIR=build/out
        mkdir -p "$OUT_DIR" reports
        curl -fsSL -o data.csv https://example.com/data.csv
        python3 scripts/stats.py mean data.csv > reports/mean.txt 2>&1
        (cd reports && ls)
        cd ~/my-project
        """))
    assert {"reports", "data.csv", "reports/mean.txt"} <= eff.writes
    assert eff.runs == {"scripts/stats.py"}
    assert eff.sets == {"OUT_DIR"} and eff.exports == {"OUT_DIR"}
    assert eff.cd == "~/my-project"  # the subshell's cd does not count; the last one does
    assert "data.csv" in eff.names and "scripts/stats.py" not in eff.names


def test_variables_used_but_not_set_are_the_readers():
    eff = effects('for f in *.pdf; do python3 scripts/x.py "$f" --token "$API_TOKEN"; done')
    assert eff.uses == {"API_TOKEN"} and "f" in eff.sets


def test_pipelines_are_numbered_together():
    cmds = commands("python3 scripts/x.py list | grep -v '#' | head -3; echo done")
    assert [c.pipeline for c in cmds[:3]] == [cmds[0].pipeline] * 3
    assert cmds[3].pipeline != cmds[0].pipeline and not cmds[3].piped


@pytest.mark.parametrize("word, expected", [
    ("scripts/x.py", True), ("report.pdf", True), ("$SKILL_DIR/assets/t.html", True),
    ("https://x.io/a.js", False), ("--out", False), ("*.pdf", False), ("$OUT/x", False),
    ("1.5", False), ("train", False),
])
def test_path_like(word, expected):
    assert path_like(word) is expected


def test_related_paths():
    assert related("out", "out/x.json") and related("out/x.json", "out")
    assert not related("out", "output") and related("a/b", "a/b")


@pytest.mark.parametrize("code, argv", [
    ("timeout -k 5 60 python3 x.py", ["python3", "x.py"]),
    ("env -u HF_TOKEN -C /tmp A=1 python3 x.py", ["python3", "x.py"]),
    ("sudo -n python3 x.py", ["python3", "x.py"]),  # -n takes no value
    ("exec -a worker python3 x.py", ["python3", "x.py"]),
    ("command python3 x.py", ["python3", "x.py"]),
    ("command -v python3", ["command", "-v", "python3"]),  # a lookup: nothing runs
    ("FOO=1 nice -n 5 ./run.sh", ["./run.sh"]),
])
def test_wrappers_and_their_options_are_skipped(code, argv):
    (cmd,) = commands(code)
    assert cmd.target_argv() == argv
