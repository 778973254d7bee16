#!/usr/bin/env bash
# Runs `bridle bench runtime --json` and the LangGraph anchor (anchor.py) in the same run, one
# after the other, and prints a table: Bridle median, LangGraph median, LangGraph/Bridle, and for
# the strict SQLite shapes their cost in raw synchronous=FULL commits on this disk.
# Usage: bench/langgraph/run.sh [combined.json]
# The venv lives at ${BRIDLE_BENCH_VENV:-/var/tmp/bridle-langgraph-venv} and is made when missing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${BRIDLE_BENCH_VENV:-/var/tmp/bridle-langgraph-venv}"
started=$(date +%s)

if ! cmp -s "$here/requirements.txt" "$venv/bridle-requirements.txt"; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$venv/bridle-requirements.txt"
fi
(cd "$root" && cargo build --release -q -p bridle-cli)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "running bridle bench runtime ..." >&2
"$root/target/release/bridle" bench runtime --json > "$tmp/bridle.json"
echo "running the LangGraph anchor ..." >&2
"$venv/bin/python" "$here/anchor.py" > "$tmp/langgraph.json"

"$venv/bin/python" "$here/compare.py" "$tmp/bridle.json" "$tmp/langgraph.json" "${1:-}"
echo "total: $(( $(date +%s) - started ))s" >&2
