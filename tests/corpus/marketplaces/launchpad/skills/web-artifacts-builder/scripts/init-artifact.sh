#!/usr/bin/env bash
# Scaffold a React + TypeScript + Tailwind artifact project.
set -euo pipefail

name="${1:?usage: init-artifact.sh <project-name>}"
if [ -e "$name" ]; then
  echo "$name already exists" >&2
  exit 1
fi
npx --yes create-vite@5 "$name" --template react-ts
cd "$name"
pnpm install
pnpm add -D tailwindcss@3 postcss autoprefixer parcel @parcel/config-default html-inline
npx tailwindcss init -p
cat > .parcelrc <<'JSON'
{ "extends": "@parcel/config-default" }
JSON
echo "Project $name ready. cd $name and edit src/App.tsx."
