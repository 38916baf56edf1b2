#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = ["click>=8.1"]
# ///
"""Lint PostgreSQL DDL files."""
from __future__ import annotations

import re
import sys

import click

CREATE = re.compile(r"CREATE TABLE\s+(\w+)\s*\((.*?)\);", re.S | re.I)
ADD_NOT_NULL = re.compile(r"ADD COLUMN\s+(\w+)[^;]*NOT NULL(?![^;]*DEFAULT)", re.I)
RULES = ("pk", "length", "not-null")


def lint(text: str, rules: tuple[str, ...], max_identifier: int) -> list[tuple[str, str]]:
    found = []
    for name, body in CREATE.findall(text):
        if "pk" in rules and "PRIMARY KEY" not in body.upper():
            found.append(("error", f"{name}: no primary key"))
        if "length" in rules and len(name) > max_identifier:
            found.append(("warning", f"{name}: {len(name)} characters > {max_identifier}"))
    if "not-null" in rules:
        for col in ADD_NOT_NULL.findall(text):
            found.append(("error", f"{col}: NOT NULL without DEFAULT"))
    return found


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--max-identifier", type=int, default=63, show_default=True)
@click.option("--rule", "rules", multiple=True, type=click.Choice(RULES))
@click.option("--strict", is_flag=True, help="warnings fail too")
def main(files: tuple[str, ...], max_identifier: int, rules: tuple[str, ...], strict: bool) -> None:
    rules = rules or RULES
    worst = 0
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for level, msg in lint(fh.read(), rules, max_identifier):
                click.echo(f"{f}: {level}: {msg}")
                worst = max(worst, 2 if level == "error" else 1)
    sys.exit(1 if worst == 2 or (strict and worst) else 0)


if __name__ == "__main__":
    main()
