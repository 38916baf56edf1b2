"""What a documented block reads, writes, sets and runs (aeval.skill.shellparse), without running
it."""

from __future__ import annotations

from textwrap import dedent

import pytest

from aeval.skill.shellparse import (
    as_skill_var,
    commands,
    effects,
    path_like,
    related,
    skill_root_rest,
)


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


# ---- issue 31: the skill folder's spellings, and what an interpreter runs -------------------

@pytest.mark.parametrize("text, names, expected", [
    ("python3 {baseDir}/scripts/scan.py --path .", (),
     "python3 $SKILL_DIR/scripts/scan.py --path ."),
    ('python3 "${CLAUDE_SKILL_DIR}/scripts/scan.py"', (), 'python3 "$SKILL_DIR/scripts/scan.py"'),
    ("$CLAUDE_SKILL_DIR/bin/tool", (), "$SKILL_DIR/bin/tool"),
    ("${SKILL_DIR}/x.py", (), "$SKILL_DIR/x.py"),
    ("python /mnt/skills/user/pdf/scripts/fill.py a.pdf", ("pdf",),
     "python $SKILL_DIR/scripts/fill.py a.pdf"),
    ("cat /mnt/skills/public/pdf/REFERENCE.md", ("pdf",), "cat $SKILL_DIR/REFERENCE.md"),
    # another skill's install path is not this skill's folder
    ("python /mnt/skills/public/docx/ooxml/unpack.py", ("pdf",),
     "python /mnt/skills/public/docx/ooxml/unpack.py"),
    ("ls /mnt/skills/user/pdfx/x", ("pdf",), "ls /mnt/skills/user/pdfx/x"),
    # the reader's variables and placeholders stay what they are
    ("echo ${baseDir}/x $CLAUDE_SKILL_DIRS {input}", (),
     "echo ${baseDir}/x $CLAUDE_SKILL_DIRS {input}"),
])
def test_every_spelling_of_the_skill_folder_reads_as_skill_dir(text, names, expected):
    assert as_skill_var(text, names) == expected


def test_the_spellings_keep_every_line_where_it_was():
    block = "cd {baseDir}\npython3 {baseDir}/scripts/a.py \\\n  --in /mnt/skills/user/s/x.csv\n"
    out = as_skill_var(block, ("s",), to="${SKILL_DIR}")
    assert out.count("\n") == block.count("\n")
    assert out == ("cd ${SKILL_DIR}\npython3 ${SKILL_DIR}/scripts/a.py \\\n"
                   "  --in ${SKILL_DIR}/x.csv\n")


@pytest.mark.parametrize("word, rest", [
    ("{baseDir}/scripts/x.py", "scripts/x.py"), ('"{baseDir}"', ""),
    ("${CLAUDE_SKILL_DIR}", ""), ("$SKILL_DIR/", ""), ("scripts/x.py", None),
    ("${baseDir}/x", None),
])
def test_the_rest_after_the_skill_folder(word, rest):
    assert skill_root_rest(word) == rest


@pytest.mark.parametrize("code, script, direct", [
    ("./scripts/fit.py data.csv", "./scripts/fit.py", True),
    ("{baseDir}/scripts/scan.py --path .", "{baseDir}/scripts/scan.py", True),
    ("uv run scripts/fit_curve.py data.csv", "scripts/fit_curve.py", False),
    ("uv run --with pandas --python 3.11 scripts/fit_curve.py data.csv",
     "scripts/fit_curve.py", False),
    ("uv run python scripts/fit_curve.py data.csv", "scripts/fit_curve.py", False),
    ("uv run --script scripts/fit_curve.py data.csv", "scripts/fit_curve.py", False),
    ("uv run scripts/serve", "scripts/serve", True),  # not a .py: uv starts it as a program
    ("poetry run scripts/fit.py", "scripts/fit.py", True),
    ("node scripts/render.js in.md", "scripts/render.js", False),
    ("bash scripts/rotate.sh --dry-run", "scripts/rotate.sh", False),
    ("sh scripts/rotate.sh", "scripts/rotate.sh", False),
    ("deno run --allow-read scripts/check.ts", "scripts/check.ts", False),
    ("npx tsx scripts/build.ts --out dist", "scripts/build.ts", False),
    ("npx -y tsx scripts/build.ts", "scripts/build.ts", False),
    ("python -m scripts.fit data.csv", None, False),
])
def test_a_script_an_interpreter_runs_is_not_run_directly(code, script, direct):
    (cmd,) = commands(code)
    assert cmd.script()[0] == script
    assert cmd.runs_directly() is direct
