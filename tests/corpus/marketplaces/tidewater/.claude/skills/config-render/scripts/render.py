#!/usr/bin/env python3
"""Render a template with the settings of one environment."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from renderlib import MissingKey, load_config, render

CONFIG = Path(__file__).resolve().parent.parent / "config"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("template", nargs="?")
    p.add_argument("--env", default=os.environ.get("RENDER_ENV", "dev"))
    p.add_argument("--out", help="write here instead of stdout (a bare name goes to output.dir)")
    p.add_argument("--list-keys", action="store_true")
    args = p.parse_args()
    cfg = load_config(CONFIG, args.env)
    if args.list_keys:
        for k, v in sorted(cfg.items()):
            print(f"{k} = {v!r}")
        return 0
    if not args.template:
        p.error("a template is required (or --list-keys)")
    try:
        text = render(Path(args.template).read_text(), cfg)
    except MissingKey as e:
        print(f"render.py: no setting {e.args[0]!r} for env {args.env}", file=sys.stderr)
        return 1
    if args.out:
        out = Path(args.out)
        if out.parent == Path("."):
            out = Path(cfg["output"]["dir"]) / out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
