#!/usr/bin/env bash
# Install the agent CLIs the codex and opencode runtimes drive, pinned to the versions in
# adapters/runtimes/codex.py (CODEX_VERSION) and adapters/runtimes/opencode.py (OPENCODE_VERSION), into the
# project-local npm prefix .ci/node_modules (binaries in .ci/node_modules/bin, where the
# adapters look after $AEVAL_CODEX_BIN / $AEVAL_OPENCODE_BIN and PATH); plus ripgrep, which
# OpenCode would otherwise download. Idempotent: a pinned CLI already installed is skipped.
#
#   bash .ci/install-clis.sh            # both CLIs and ripgrep
#   PYTHON=.venv/bin/python bash .ci/install-clis.sh   # pip fallback for ripgrep into a venv
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="${AEVAL_CLI_PREFIX:-.ci/node_modules}"
pin() { sed -n "s/^$1 = \"\\(.*\\)\"$/\\1/p" "$2"; }
CODEX_VERSION="$(pin CODEX_VERSION adapters/runtimes/codex.py)"
OPENCODE_VERSION="$(pin OPENCODE_VERSION adapters/runtimes/opencode.py)"
[ -n "$CODEX_VERSION" ] && [ -n "$OPENCODE_VERSION" ] || { echo "pins not found" >&2; exit 1; }

have() {  # have BINARY EXPECTED_VERSION_OUTPUT (asked with a throwaway HOME: the CLIs make
  # state folders even for --version, and the user's own ~/.codex is not the script's to touch)
  local home; home="$(mktemp -d)"
  [ -x "$PREFIX/bin/$1" ] && [ "$(HOME="$home" CODEX_HOME="$home" XDG_DATA_HOME="$home" \
    XDG_CONFIG_HOME="$home" XDG_STATE_HOME="$home" XDG_CACHE_HOME="$home" \
    "$PREFIX/bin/$1" --version 2>/dev/null | head -1)" = "$2" ]
  local ok=$?; rm -rf "$home"; return $ok
}

missing=()
have codex "codex-cli $CODEX_VERSION" || missing+=("@openai/codex@$CODEX_VERSION")
have opencode "$OPENCODE_VERSION" || missing+=("opencode-ai@$OPENCODE_VERSION")
if [ "${#missing[@]}" -gt 0 ]; then
  command -v npm >/dev/null || { echo "npm is needed to install ${missing[*]}" >&2; exit 1; }
  echo "installing ${missing[*]} into $PREFIX"
  npm install --global --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${missing[@]}"
fi
have codex "codex-cli $CODEX_VERSION" || { echo "codex $CODEX_VERSION did not install" >&2; exit 1; }
have opencode "$OPENCODE_VERSION" || { echo "opencode $OPENCODE_VERSION did not install" >&2; exit 1; }
echo "codex $CODEX_VERSION, opencode $OPENCODE_VERSION: $PREFIX/bin"

if ! command -v rg >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing ripgrep (apt)"
    apt-get install -y -qq ripgrep >/dev/null 2>&1 \
      || { apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null; }
  else
    echo "installing ripgrep (pip)"
    "${PYTHON:-python3}" -m pip install --quiet ripgrep
  fi
fi
command -v rg >/dev/null || [ -x "$(dirname "$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')")/rg" ] \
  || { echo "ripgrep did not install" >&2; exit 1; }
echo "ripgrep: $(command -v rg || echo "in the ${PYTHON:-python3} environment")"
