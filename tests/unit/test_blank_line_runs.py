"""aeval's own patterns over a long run of blank lines, read in linear time. A pattern
anchored at each line (``^\\s*`` under MULTILINE) let ``\\s*`` run on over every following
blank line from every line start: 150 KB of blank lines in a SKILL.md block, a skill script or
a failing block's output took minutes of aeval's own process. Each reader runs in a child
process here; a hang is its timeout."""

from __future__ import annotations

import subprocess
import sys
import textwrap

READERS = textwrap.dedent('''
    import sys
    from pathlib import Path
    from aeval.skill.script_interface import read_interface
    from aeval.skill.shell_blocks import counter_example
    from aeval.verdicts.missing import frames_in_skill
    from aeval.verdicts.static_check import _PROMPTED

    RUN = "\\n" * 400_000  # blank lines, as a generated block or a padded script has them
    skill = Path(sys.argv[1])
    # a block shown as what not to do: its warning comment after the padding is still seen
    assert counter_example("echo batch" + RUN + "# wrong: never do this\\nrm -rf data")
    assert not counter_example("echo batch" + RUN + "python3 scripts/report.py summary")
    # a case statement after padding still reads as the script's subcommands
    script = "#!/bin/sh" + RUN + 'case "$1" in\\n  summary) echo s;;\\n  *) exit 2;;\\nesac\\n'
    assert read_interface(script, ".sh").actions == {"summary"}
    # a traceback after padding in a failing block's output still names its frame
    out = RUN + f'  File "{skill}/scripts/report.py", line 3, in <module>\\nValueError: x\\n'
    assert frames_in_skill(out, skill) == [("scripts/report.py", 3)]
    assert _PROMPTED.search("echo a" + RUN + "$ python3 scripts/report.py")
    print("read")
''')


def test_a_long_run_of_blank_lines_is_read_in_linear_time(tmp_path):
    skill = tmp_path / "report"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "report.py").write_text("import sys\nrows = []\nraise ValueError('x')\n")
    r = subprocess.run([sys.executable, "-c", READERS, str(skill)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "read", r.stderr[-2000:]
