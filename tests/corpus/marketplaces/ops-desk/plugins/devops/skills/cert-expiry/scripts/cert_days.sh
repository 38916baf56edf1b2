#!/usr/bin/env bash
# cert_days.sh [--warn DAYS] (<file.pem> | --host HOST:PORT): days until a certificate expires.
set -euo pipefail

warn=""
host=""
file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --warn) warn="$2"; shift 2 ;;
    --host) host="$2"; shift 2 ;;
    -h|--help) sed -n '2p' "$0"; exit 0 ;;
    -*) echo "cert_days.sh: unknown option $1" >&2; exit 2 ;;
    *) file="$1"; shift ;;
  esac
done

if [ -n "$host" ]; then
  pem="$(echo | openssl s_client -connect "$host" -servername "${host%%:*}" 2>/dev/null \
         | openssl x509 2>/dev/null)" || { echo "cert_days.sh: no certificate from $host" >&2; exit 1; }
elif [ -n "$file" ]; then
  [ -r "$file" ] || { echo "cert_days.sh: cannot read $file" >&2; exit 1; }
  pem="$(cat "$file")"
else
  echo "usage: cert_days.sh [--warn DAYS] (<file.pem> | --host HOST:PORT)" >&2
  exit 2
fi

subject="$(printf '%s\n' "$pem" | openssl x509 -noout -subject)"
end="$(printf '%s\n' "$pem" | openssl x509 -noout -enddate | cut -d= -f2)"
days=$(( ( $(date -d "$end" +%s) - $(date +%s) ) / 86400 ))
echo "$subject"
echo "expires: $end ($days days)"
if [ -n "$warn" ] && [ "$days" -lt "$warn" ]; then
  echo "WARNING: fewer than $warn days left" >&2
  exit 1
fi
