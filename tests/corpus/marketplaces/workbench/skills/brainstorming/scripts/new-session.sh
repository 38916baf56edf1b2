#!/usr/bin/env bash
# Start a brainstorming session folder with a design document skeleton.
#
#   scripts/new-session.sh "Offline sync for the mobile app" [parent-dir]
#
# Prints the path of the new design document. The parent defaults to $TMPDIR (or /tmp);
# pass docs/plans to keep the design in the repository.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 \"<topic>\" [parent-dir]" >&2
  exit 2
fi

topic="$1"
parent="${2:-${TMPDIR:-/tmp}}"
slug="$(printf '%s' "$topic" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-//; s/-$//')"
dir="$parent/$(date +%Y-%m-%d)-$slug"
mkdir -p "$dir"
doc="$dir/design.md"

if [ -e "$doc" ]; then
  echo "$doc already exists; continuing that session" >&2
else
  cat > "$doc" <<MD
# $topic

## Problem

## Constraints

## Options considered

## Decision

## Open questions
MD
fi
echo "$doc"
