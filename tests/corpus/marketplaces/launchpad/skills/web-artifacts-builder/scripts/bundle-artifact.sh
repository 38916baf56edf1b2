#!/usr/bin/env bash
# Bundle the artifact project in the current folder into a single bundle.html.
set -euo pipefail

if [ ! -f "package.json" ]; then
  echo "No package.json found. Run this script from your project root." >&2
  exit 1
fi
if [ ! -f "index.html" ]; then
  echo "No index.html in the project root." >&2
  exit 1
fi
rm -rf dist
pnpm exec parcel build index.html --dist-dir dist --no-source-maps
pnpm exec html-inline -i dist/index.html -o bundle.html -b dist
echo "bundle.html: $(wc -c < bundle.html) bytes"
