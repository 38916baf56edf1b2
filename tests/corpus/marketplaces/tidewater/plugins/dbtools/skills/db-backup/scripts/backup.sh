#!/usr/bin/env bash
# pg_dump DATABASE_URL to DIR and rotate; -n: dry run.
set -euo pipefail

usage() { echo "usage: backup.sh -d DATABASE_URL -o DIR [-k KEEP] [-n]" >&2; exit 2; }

url="" dir="" keep=7 dry=0
while getopts ":d:o:k:n" opt; do
  case "$opt" in
    d) url="$OPTARG" ;;
    o) dir="$OPTARG" ;;
    k) keep="$OPTARG" ;;
    n) dry=1 ;;
    *) usage ;;
  esac
done
[[ -n "$url" && -n "$dir" ]] || usage
command -v pg_dump >/dev/null || { echo "backup.sh: pg_dump not found" >&2; exit 127; }

db="${url##*/}"; db="${db%%\?*}"
out="$dir/$db-$(date +%Y-%m-%dT%H%M%S).dump"
if (( dry )); then echo "would dump to $out"; else mkdir -p "$dir"; pg_dump -Fc -f "$out" "$url"; fi
prune=("$(dirname "$0")/prune.sh" -o "$dir" -k "$keep")
(( dry )) && prune+=(-n)
"${prune[@]}"
