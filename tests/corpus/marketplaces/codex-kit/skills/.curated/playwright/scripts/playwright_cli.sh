#!/usr/bin/env bash
# Thin wrapper around the Playwright CLI with the defaults this skill uses.
#
#   ./scripts/playwright_cli.sh doctor                 # what is installed
#   ./scripts/playwright_cli.sh screenshot URL FILE    # full-page PNG
#   ./scripts/playwright_cli.sh pdf URL FILE           # print to PDF (Chromium)
#   ./scripts/playwright_cli.sh help
set -euo pipefail

VIEWPORT="${PW_VIEWPORT:-1280,800}"

doctor() {
  echo "node:        $(node --version 2>/dev/null || echo 'not installed')"
  echo "npx:         $(command -v npx >/dev/null && echo available || echo 'not installed')"
  if command -v playwright >/dev/null 2>&1; then
    echo "playwright:  $(playwright --version)"
  else
    echo "playwright:  not installed (npm install -g playwright)"
  fi
  echo "viewport:    ${VIEWPORT}"
}

case "${1:-help}" in
  doctor)
    doctor
    ;;
  screenshot)
    [ $# -eq 3 ] || { echo "usage: $0 screenshot URL FILE" >&2; exit 2; }
    playwright screenshot --full-page --viewport-size="$VIEWPORT" "$2" "$3"
    ;;
  pdf)
    [ $# -eq 3 ] || { echo "usage: $0 pdf URL FILE" >&2; exit 2; }
    playwright pdf "$2" "$3"
    ;;
  help|-h|--help)
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
    ;;
  *)
    echo "$0: unknown command '$1' (try: $0 help)" >&2
    exit 2
    ;;
esac
