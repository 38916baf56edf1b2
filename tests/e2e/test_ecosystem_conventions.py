"""Issue 31, the ecosystem's conventions, through `aeval run --runtime literal`: skills written
the way public marketplaces of other styles write them.

- a security plugin's skill calls its scanner as ``python3 {baseDir}/scripts/...`` (Claude
  Code's token), ``${CLAUDE_SKILL_DIR}/scripts/...`` or ``/mnt/skills/user/<name>/scripts/...``
  (claude.ai's install path): the doc test runs the skill copy's scanner, so the clean skill
  passes (exercised, not untested) and a renamed argparse flag fails on SKILL.md's line;
- a scientific skill runs ``uv run scripts/fit_curve.py data.csv``, a script with no exec
  bit and no interpreter line: no "not executable";
- an install-only block (``npm install -g X`` then ``X --version``) is skipped as an install
  step, with the reason, and costs nothing;
- a skill's shell script bash cannot parse is the skill's defect ("unexpected token" is no
  credential);
- a console session whose ``> `` continuation line names a script the skill lacks is an S0
  finding.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

SCANNER = '''\
    #!/usr/bin/env python3
    """Scan a source tree for hard-coded secrets; report them as SARIF 2.1.0 or JSON."""
    import argparse
    import json
    import os
    import re
    import sys

    RULES = {
        "aws-access-key-id": re.compile(r"\\bAKIA[0-9A-Z]{16}\\b"),
        "slack-token": re.compile(r"\\bxox[baprs]-[0-9A-Za-z-]{20,}\\b"),
        "private-key": re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----"),
    }


    def scan(root):
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        text = fh.read(2_000_000)
                except OSError:
                    continue
                for rule, rx in RULES.items():
                    for m in rx.finditer(text):
                        yield {"rule": rule, "file": os.path.relpath(path, root),
                               "line": text.count("\\n", 0, m.start()) + 1}


    def sarif(findings):
        results = [{"ruleId": f["rule"], "level": "error",
                    "message": {"text": f"possible {f['rule']}"},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": f["file"]},
                        "region": {"startLine": f["line"]}}}]} for f in findings]
        return {"version": "2.1.0", "runs": [{"tool": {"driver": {
            "name": "scan_secrets", "rules": [{"id": r} for r in RULES]}},
            "results": results}]}


    def main(argv=None):
        ap = argparse.ArgumentParser(prog="scan_secrets.py", description=__doc__)
        ap.add_argument("--path", default=".", help="the tree to scan")
        ap.add_argument("--FORMAT_FLAG", dest="fmt", choices=("sarif", "json"),
                        default="json")
        ap.add_argument("--fail-on-findings", action="store_true")
        args = ap.parse_args(argv)
        findings = list(scan(args.path))
        out = sarif(findings) if args.fmt == "sarif" else findings
        json.dump(out, sys.stdout, indent=2)
        print()
        return 1 if findings and args.fail_on_findings else 0


    if __name__ == "__main__":
        sys.exit(main())
    '''

RULES_MD = """\
    # Rules

    | id | what |
    | --- | --- |
    | aws-access-key-id | an AWS access key id |
    | slack-token | a Slack bot or user token |
    | private-key | a PEM private key block |
    """


def scanner_skill(name: str, root: str, flag: str = "format") -> dict[str, str]:
    """A security plugin's secret scanner whose SKILL.md names its script through ``root``
    (``{baseDir}``, ``${CLAUDE_SKILL_DIR}``, ``/mnt/skills/user/<name>``)."""
    return {
        "SKILL.md": f"""\
            ---
            name: {name}
            description: Scan a repository for hard-coded secrets (AWS keys, Slack tokens,
              private keys) and report them as SARIF for code scanning.
            ---
            # Secret scanning

            Use this before a commit or a release. The rules are in
            [the rule table]({root}/references/rules.md).

            ## Scan

            Scan the current tree and emit SARIF for the code-scanning upload:

            ```bash
            python3 {root}/scripts/scan_secrets.py --path . --format sarif
            ```

            For a repository of your own, point it there:

            ```bash
            python3 {root}/scripts/scan_secrets.py --path <repo> --format json
            ```

            In CI, make findings fail the job with `--fail-on-findings`.
            """,
        "scripts/scan_secrets.py": SCANNER.replace("FORMAT_FLAG", flag),
        "references/rules.md": RULES_MD,
    }




def line_of(skill_md: str, needle: str) -> int:
    """SKILL.md's 1-based line that holds ``needle`` (the frontmatter counted)."""
    return next(i for i, ln in enumerate(dedent(skill_md).splitlines(), 1) if needle in ln)


SCAN_LINE = line_of(scanner_skill("x", "{baseDir}")["SKILL.md"], "--format sarif")

FIT = """\
    # /// script
    # requires-python = ">=3.10"
    # dependencies = []
    # ///
    \"\"\"Least-squares fit of y = a*x + b to a two-column CSV (x,y); prints a, b and r^2.\"\"\"
    import argparse
    import csv


    def fit(rows):
        n = len(rows)
        sx = sum(x for x, _ in rows)
        sy = sum(y for _, y in rows)
        sxx = sum(x * x for x, _ in rows)
        sxy = sum(x * y for x, y in rows)
        a = (n * sxy - sx * sy) / (n * sxx - sx * sx)
        b = (sy - a * sx) / n
        mean = sy / n
        ss_tot = sum((y - mean) ** 2 for _, y in rows)
        ss_res = sum((y - (a * x + b)) ** 2 for x, y in rows)
        return a, b, 1 - ss_res / ss_tot


    def main():
        ap = argparse.ArgumentParser(prog="fit_curve.py")
        ap.add_argument("csv")
        ap.add_argument("--plot", action="store_true")
        args = ap.parse_args()
        with open(args.csv, newline="") as fh:
            rows = [(float(r["x"]), float(r["y"])) for r in csv.DictReader(fh)]
        a, b, r2 = fit(rows)
        print(f"a={a:.4f} b={b:.4f} r2={r2:.4f}")


    main()
    """

CURVE_FIT = {
    "SKILL.md": """\
        ---
        name: curve-fit
        description: Fit a line to measured data (CSV with x,y columns) and report the
          coefficients and r^2. Use for calibration curves.
        ---
        # Curve fitting

        The script declares its dependencies inline (PEP 723), so uv runs it as is:

        ```bash
        uv run scripts/fit_curve.py data.csv
        ```

        Your own data: `uv run scripts/fit_curve.py <measurements.csv>`.
        """,
    "scripts/fit_curve.py": FIT,
    "data.csv": "x,y\n0,1.02\n1,2.98\n2,5.01\n3,7.03\n4,8.97\n",
}

ROTATE = """\
    #!/usr/bin/env bash
    # Rotate the *.log files of a folder, keeping the newest N compressed copies.
    set -euo pipefail
    keep=5 dry_run=0 dir=logs
    while [ $# -gt 0 ]; do
      case "$1" in
        --keep) keep=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        *) dir=$1; shift ;;
      esac
    done
    mkdir -p "$dir"
    for f in "$dir"/*.log; do
      [ -e "$f" ] || continue
      if [ "$dry_run" = 1 ]; THEN
        echo "would rotate $f (keep $keep)"
      else
        gzip -c "$f" > "$f.$(date +%s).gz" && : > "$f"
      fi
    done
    echo "rotated logs in $dir"
    """

LOG_ROTATE = {
    "SKILL.md": """\
        ---
        name: log-rotate
        description: Rotate and compress application logs, keeping the newest copies.
        ---
        # Log rotation

        See what would happen first:

        ```bash
        bash scripts/rotate.sh --keep 5 --dry-run logs
        ```
        """,
    "scripts/rotate.sh": ROTATE.replace("THEN", "then"),
}

MERMAID = {
    "SKILL.md": """\
        ---
        name: mermaid-check
        description: Check Mermaid diagram sources before rendering them.
        ---
        # Mermaid check

        Install the renderer once:

        ```bash
        npm install -g @aeval-test/absent-mermaid-cli
        absent-mmdc --version
        ```

        Check the bundled flow chart:

        ```bash
        python3 scripts/check_diagram.py assets/flow.mmd
        ```
        """,
    "scripts/check_diagram.py": """\
        import sys

        KINDS = ("graph", "flowchart", "sequenceDiagram", "classDiagram", "stateDiagram")
        text = open(sys.argv[1], encoding="utf-8").read()
        first = text.strip().splitlines()[0].split()[0] if text.strip() else ""
        if first not in KINDS:
            sys.exit(f"{sys.argv[1]}: not a Mermaid diagram (starts with {first!r})")
        print(f"{sys.argv[1]}: {first}, {len(text.splitlines())} lines")
        """,
    "assets/flow.mmd": "flowchart LR\n  A[Form] --> B{Valid?}\n  B -->|yes| C[Save]\n",
}

FORM_FIELDS = {
    "SKILL.md": """\
        ---
        name: form-fields
        description: List the fields of a PDF form.
        ---
        # Form fields

        ```bash
        python3 scripts/fields.py --help
        ```

        A session looks like this:

        ```console
        $ python3 \\
        >   scripts/SCRIPT --json form.pdf
        {"fields": ["name", "date"]}
        ```
        """,
    "scripts/fields.py": """\
        import argparse

        ap = argparse.ArgumentParser(prog="fields.py")
        ap.add_argument("pdf", nargs="?")
        ap.add_argument("--json", action="store_true")
        print(ap.parse_args())
        """,
}
CONSOLE_LINE = line_of(FORM_FIELDS["SKILL.md"], "$ python3")


def build(root: Path, skills: dict[str, dict[str, str]]) -> None:
    for name, files in skills.items():
        for rel, text in files.items():
            p = root / "skills" / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(dedent(text))
            os.chmod(p, 0o644)  # no file of these skills has an exec bit


def clean() -> dict[str, dict[str, str]]:
    return {
        "scan-basedir": scanner_skill("scan-basedir", "{baseDir}"),
        "scan-claude-var": scanner_skill("scan-claude-var", "${CLAUDE_SKILL_DIR}"),
        "scan-mnt": scanner_skill("scan-mnt", "/mnt/skills/user/scan-mnt"),
        "curve-fit": CURVE_FIT,
        "log-rotate": LOG_ROTATE,
        "mermaid-check": MERMAID,
        "form-fields": {**FORM_FIELDS, "SKILL.md": FORM_FIELDS["SKILL.md"].replace(
            "SCRIPT", "fields.py")},
    }


def run(tmp: Path, skills: dict[str, dict[str, str]]) -> tuple[int, dict, Path]:
    mp, out = tmp / "mp", tmp / "store"
    build(mp, skills)
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out), "-q"])
    (rd,) = (out / "runs").iterdir()
    run_ = json.loads((rd / "run.json").read_text())
    return code, {s["name"]: s for s in run_["skills"]}, rd


def doc_test_of(rd: Path, case: dict) -> dict:
    g = json.loads((rd / case["dir"] / "grading.json").read_text())
    return next(e for e in g["expectations"] if e["id"] == "S2")


def test_a_clean_marketplace_of_other_styles_passes_and_is_exercised(tmp_path):
    code, skills, _ = run(tmp_path, clean())
    found = {n: s["status"] for n, s in skills.items()}
    for name in ("scan-basedir", "scan-claude-var", "scan-mnt"):
        (case,) = skills[name]["cases"]
        assert found[name] == "pass", (name, case["reason"])
        # the scanner ran from the copy: the doc test's block, not a skip
        assert "1 of 2 documented block(s) ran without a skill defect" in case["reason"], (
            name, case["reason"])
    (case,) = skills["curve-fit"]["cases"]
    assert found["curve-fit"] != "fail" and "not executable" not in case["reason"], case
    # uv is in every case's toolchain (a dependency of aeval): the documented command runs
    assert found["curve-fit"] == "pass", case
    (case,) = skills["mermaid-check"]["cases"]
    assert found["mermaid-check"] == "pass", case["reason"]
    at = line_of(MERMAID["SKILL.md"], "npm install -g")
    assert f"line {at}: skipped (an install step (installs @aeval-test/absent-mermaid-cli" \
        in case["reason"], case["reason"]
    assert found["log-rotate"] == "pass", skills["log-rotate"]["cases"][0]["reason"]
    assert found["form-fields"] == "pass", skills["form-fields"]["cases"][0]["reason"]
    assert code == 0, found


def test_planted_defects_in_those_conventions_fail_on_their_line(tmp_path):
    skills_ = {
        "scan-basedir": scanner_skill("scan-basedir", "{baseDir}", flag="output-format"),
        "scan-claude-var": scanner_skill("scan-claude-var", "${CLAUDE_SKILL_DIR}",
                                         flag="output-format"),
        "scan-mnt": scanner_skill("scan-mnt", "/mnt/skills/user/scan-mnt",
                                  flag="output-format"),
        "log-rotate": {**LOG_ROTATE, "scripts/rotate.sh": ROTATE},
        "form-fields": {**FORM_FIELDS, "SKILL.md": FORM_FIELDS["SKILL.md"].replace(
            "SCRIPT", "list_fields.py")},
    }
    code, skills, rd = run(tmp_path, skills_)
    found = {n: s["status"] for n, s in skills.items()}
    assert set(found.values()) == {"fail"}, found
    assert code == 1
    for name in ("scan-basedir", "scan-claude-var", "scan-mnt"):
        (case,) = skills[name]["cases"]
        assert (f"SKILL.md line {SCAN_LINE}: documents the option --format for "
                "scripts/scan_secrets.py") in case["reason"], (name, case["reason"])
        s2 = doc_test_of(rd, case)
        assert s2["status"] == "failed", (name, s2)
        assert f"SKILL.md line {SCAN_LINE}: the skill's scan_secrets.py rejects what " \
               "SKILL.md documents: unrecognized arguments: --format sarif" in s2["evidence"]
    (case,) = skills["log-rotate"]["cases"]
    s2 = doc_test_of(rd, case)
    assert s2["status"] == "failed", s2
    assert "bash cannot parse the skill's scripts/rotate.sh: line" in s2["evidence"], s2
    assert "syntax error near unexpected token" in s2["evidence"], s2
    (case,) = skills["form-fields"]["cases"]
    assert f"SKILL.md line {CONSOLE_LINE}: runs scripts/list_fields.py, which the skill " \
           "does not have" in case["reason"], case["reason"]
