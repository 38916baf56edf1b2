#!/usr/bin/env bash
# Poll a condition command until it succeeds, instead of sleeping for a guessed time.
#
#   ./wait-for.sh [--timeout SECONDS] [--interval SECONDS] -- CONDITION...
#
# Exits 0 as soon as CONDITION succeeds, 1 on timeout (default 30 s, polled every 0.2 s).
set -uo pipefail

timeout=30
interval=0.2
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "wait-for.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--timeout S] [--interval S] -- CONDITION..." >&2; exit 2; }

start=$(date +%s)
until "$@" >/dev/null 2>&1; do
  if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then
    echo "timed out after ${timeout}s waiting for: $*" >&2
    exit 1
  fi
  sleep "$interval"
done
echo "ready after $(( $(date +%s) - start ))s: $*"
