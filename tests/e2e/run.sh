#!/usr/bin/env bash
# End-to-end suite with real clients (kept apart from `cargo test`, which needs no Python or Node).
# Creates its virtualenv when missing (packages from PyPI, pinned in requirements.txt), builds
# the `bridle` binary (debug; reuses CARGO_TARGET_DIR when set) and runs every suite under
# tests/e2e/. Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv="${BRIDLE_E2E_VENV:-/var/tmp/bridle-e2e-venv}"
requirements="tests/e2e/requirements.txt"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== e2e: virtualenv $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  echo "$want" > "$stamp"
fi

echo "== e2e: build bridle"
cargo build -q -p bridle-cli
target="${CARGO_TARGET_DIR:-target}"
binary="$(cd "$target/debug" && pwd)/bridle"

echo "== e2e: MCP (Python mcp SDK, stdio and Streamable HTTP)"
"$venv/bin/python" tests/e2e/mcp/test_mcp.py "$binary"

echo "== e2e: MCP 2026-07-28 (TypeScript SDK v2) and the MCP conformance suite (Node)"
bash tests/e2e/mcp/ts/run.sh "$binary"

echo "== e2e: MCP gateway (an upstream written with the Python mcp SDK behind bridle mcp --stdio)"
"$venv/bin/python" tests/e2e/mcp/test_gateway.py "$binary"

echo "== e2e: HTTP API (schemathesis against /openapi.json)"
bash tests/e2e/api/schemathesis.sh "$binary" "$venv/bin/st"

echo "== e2e: console (Debian's chromium driven by playwright-core from npm)"
bash tests/e2e/console/run.sh "$binary"
