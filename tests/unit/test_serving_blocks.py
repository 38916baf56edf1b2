"""A documented block that starts a program which serves until the reader stops it (an MCP
inspector, a dev server, `python -m http.server`, a watcher) is skipped with that reason: run,
it held the doc test to its block timeout (5 minutes per case) and said nothing of the skill.
The same programs' one-shot commands (`vite build`, `npm run build`), a server started in the
background with `&`, and the skill's own scripts run as before."""

from __future__ import annotations

import pytest

from aeval.skill.shell_blocks import plan_blocks


@pytest.mark.parametrize("code", [
    "npx @modelcontextprotocol/inspector python3 server.py",
    "npx -y @modelcontextprotocol/inspector@0.14 node build/index.js",
    "cd site && npm run dev",
    "python3 -m http.server 8000 --directory dist",
    "uv run uvicorn app.main:app --reload",
    "flask run --port 5001",
    "jupyter lab notebooks/",
    "vite --port 3000",
    "npx tsc --watch",
])
def test_a_block_that_serves_in_the_foreground_is_skipped_saying_so(code):
    (plan,) = plan_blocks([(12, code)])
    assert plan.action == "skip", plan
    assert "serves until the reader stops it" in plan.reason


@pytest.mark.parametrize("code", [
    "npm run build",
    "npx vite build",
    "next build && next export",
    "python3 server.py --help",
    "python3 scripts/serve_report.py --out report.html",
    "python3 -m http.server 8000 &\nsleep 1\ncurl -s localhost:8000/index.html",
    "npx tsc -p .",
])
def test_one_shot_commands_and_background_servers_still_run(code):
    (plan,) = plan_blocks([(12, code)])
    assert plan.action == "run", plan
