#!/usr/bin/env bash
# Compare a .env file with a list of required names.
set -euo pipefail

usage() { echo "usage: check_env.sh -r REQUIRED -e ENVFILE [-s]" >&2; exit 2; }

required="" envfile="" strict=0
while getopts ":r:e:s" opt; do
  case "$opt" in
    r) required="$OPTARG" ;;
    e) envfile="$OPTARG" ;;
    s) strict=1 ;;
    :) echo "check_env.sh: -$OPTARG needs a value" >&2; usage ;;
    \?) echo "check_env.sh: unknown option -$OPTARG" >&2; usage ;;
  esac
done
[[ -n "$required" && -n "$envfile" ]] || usage
placeholders="${ENV_CHECK_PLACEHOLDERS:-changeme|TODO|<.*>}"

missing=0
while IFS= read -r name; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  value=$(grep -E "^${name}=" "$envfile" | tail -n1 | cut -d= -f2- || true)
  if [[ -z "$value" ]]; then
    echo "missing: $name"; missing=1
  elif (( strict )) && [[ "$value" =~ ^($placeholders)$ ]]; then
    echo "placeholder: $name=$value"; missing=1
  fi
done < "$required"
(( missing )) || echo "ok: every required setting is set"
exit "$missing"
