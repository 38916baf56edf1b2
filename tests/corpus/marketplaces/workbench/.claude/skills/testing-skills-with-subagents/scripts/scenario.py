"""List the pressure scenarios in scenarios/, or print one as a prompt for a subagent.

    python3 scripts/scenario.py list
    python3 scripts/scenario.py show time-pressure
"""

import sys
from pathlib import Path

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def titles():
    for path in sorted(SCENARIOS.glob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        pressures = next((ln for ln in lines if ln.startswith("Pressures:")), "")
        yield path.stem, lines[0].lstrip("# "), pressures.removeprefix("Pressures: ").rstrip(".")


def do_list(args):
    for slug, title, pressures in titles():
        print(f"{slug:<18} {title} ({pressures})")


def do_show(args):
    if len(args) != 1:
        sys.exit("usage: scenario.py show NAME")
    path = SCENARIOS / f"{args[0]}.md"
    if not path.is_file():
        sys.exit(f"no scenario {args[0]!r}; see: scenario.py list")
    body = [ln[2:] if ln.startswith("> ") else ln[1:] for ln in
            path.read_text(encoding="utf-8").splitlines() if ln.startswith(">")]
    print("IMPORTANT: this is a real scenario. Choose and act; do not ask hypothetical "
          "questions.\n")
    print("\n".join(body))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    action, rest = sys.argv[1], sys.argv[2:]
    if action == "list":
        do_list(rest)
    elif action == "show":
        do_show(rest)
    else:
        sys.exit(f"unknown action {action}")
