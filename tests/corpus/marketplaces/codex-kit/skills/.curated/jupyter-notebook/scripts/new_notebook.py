"""Create a Jupyter notebook (nbformat 4) from one of the templates: an experiment (question,
setup, data, analysis, findings) or a tutorial (goal, steps with exercises, recap).

    python3 scripts/new_notebook.py --kind experiment --title "Churn drivers" --out churn.ipynb
    python3 scripts/new_notebook.py --kind tutorial --title "Intro to pandas" --out intro.ipynb
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n").splitlines(True)}


def code(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": text.strip("\n").splitlines(True)}


def experiment(title: str) -> list[dict]:
    return [
        md(f"# {title}\n\n**Question:** TODO\n\n**Answer (fill in last):** TODO"),
        md("## Setup"),
        code("import pandas as pd\nimport matplotlib.pyplot as plt\n\n"
             "pd.set_option('display.max_columns', 50)"),
        md("## Data\n\nWhere it comes from, when it was pulled, known gaps."),
        code("df = pd.read_csv('data.csv')\ndf.info()"),
        md("## Analysis"),
        code("# one question per cell; keep cells short"),
        md("## Findings\n\n1. TODO\n\n## Next steps\n\n- TODO"),
    ]


def tutorial(title: str) -> list[dict]:
    return [
        md(f"# {title}\n\nBy the end of this notebook you can: TODO"),
        md("## Step 1\n\nExplain the idea in two sentences, then show it."),
        code("# example"),
        md("**Exercise:** TODO"),
        code("# your answer here"),
        md("## Recap\n\n- TODO"),
    ]


TEMPLATES = {"experiment": experiment, "tutorial": tutorial}


def main() -> int:
    p = argparse.ArgumentParser(prog="new_notebook.py", description=__doc__.splitlines()[0])
    p.add_argument("--kind", default="experiment", help="experiment or tutorial")
    p.add_argument("--title", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.kind not in TEMPLATES:
        sys.exit(f"unknown notebook kind {args.kind}; kinds: {', '.join(TEMPLATES)}")
    out = Path(args.out)
    if out.exists():
        sys.exit(f"{out} already exists")
    nb = {"cells": TEMPLATES[args.kind](args.title), "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i:02d}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(nb['cells'])} cells, {args.kind})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
