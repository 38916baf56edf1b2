#!/usr/bin/env bash
# Remind the agent, at the start of every session, that workflow skills exist and must be
# checked before starting a task.
set -euo pipefail
cat <<'JSON'
{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "You have workbench skills. Before starting any task, check whether a skill applies (brainstorming, writing-plans, test-driven-development, systematic-debugging...) and follow it."}}
JSON
