#!/usr/bin/env bash
# End-to-end suite with real clients (kept apart from `cargo test`, which needs no Python or Node).
# Creates its virtualenv when missing (packages from PyPI, pinned in requirements.txt), builds
# the `bridle` binary (debug; reuses CARGO_TARGET_DIR when set) and runs every suite under
# tests/e2e/ (and installs ./clients/python into the virtualenv for tests/e2e/python_client/),
# and deploy/smoke.sh (two replicas on PostgreSQL; needs BRIDLE_TEST_POSTGRES_URL, skipped
# without it unless CI=true).
# Exits non-zero when anything fails.
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
  rm -f "$venv/.bridle-client.sha256"
fi
# The Python client from this checkout (its dependencies are pinned above), reinstalled whenever
# its sources change.
client_stamp="$venv/.bridle-client.sha256"
client_want="$(find clients/python/pyproject.toml clients/python/README.md clients/python/src -type f \
  -not -path '*/__pycache__/*' -not -path '*/.mypy_cache/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$client_stamp" 2>/dev/null)" != "$client_want" ]; then
  echo "== e2e: pip install ./clients/python"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./clients/python
  echo "$client_want" > "$client_stamp"
fi

echo "== e2e: build bridle"
cargo build -q -p bridle-cli
target="${CARGO_TARGET_DIR:-target}"
binary="$(cd "$target/debug" && pwd)/bridle"

echo "== e2e: deployment (deploy/smoke.sh: two bridle serve replicas on one fresh PostgreSQL schema)"
if [ -n "${BRIDLE_TEST_POSTGRES_URL:-}" ]; then
  bash deploy/smoke.sh "$binary"
elif [ "${CI:-}" = true ]; then
  echo "BRIDLE_TEST_POSTGRES_URL is unset but CI=true: the deployment smoke test must run in CI"
  exit 1
else
  echo "skipped: BRIDLE_TEST_POSTGRES_URL is unset, so the deployment smoke test does not run"
fi

echo "== e2e: MCP (Python mcp SDK, stdio and Streamable HTTP)"
"$venv/bin/python" tests/e2e/mcp/test_mcp.py "$binary"

echo "== e2e: MCP 2026-07-28 (TypeScript SDK v2) and the MCP conformance suite (Node)"
bash tests/e2e/mcp/ts/run.sh "$binary"

echo "== e2e: MCP gateway (an upstream written with the Python mcp SDK behind bridle mcp --stdio)"
"$venv/bin/python" tests/e2e/mcp/test_gateway.py "$binary"

echo "== e2e: Python client (clients/python: mypy --strict, offline tests, then sync and async against bridle serve)"
"$venv/bin/mypy" --config-file clients/python/pyproject.toml --cache-dir "$venv/.mypy_cache" clients/python/src/bridle \
  clients/python/examples clients/python/tests
"$venv/bin/python" clients/python/tests/test_offline.py
"$venv/bin/python" tests/e2e/python_client/test_client.py "$binary"

echo "== e2e: LangGraph adapter (a real graph, scripted model node, interrupt and resume)"
"$venv/bin/python" tests/e2e/python_client/test_langgraph.py "$binary"

echo "== e2e: OpenAI Agents SDK adapter (a Runner run, scripted Model, interruption and resume)"
"$venv/bin/python" tests/e2e/python_client/test_openai_agents.py "$binary"

echo "== e2e: Python client examples (clients/python/examples, as a user runs them)"
"$venv/bin/python" tests/e2e/python_client/test_examples.py "$binary"

echo "== e2e: OpenTelemetry (OTLP/HTTP traces of bridle serve and audit logs, into a collector in the test process)"
"$venv/bin/python" tests/e2e/otel/test_otel.py "$binary"

echo "== e2e: HTTP API (schemathesis against /openapi.json)"
bash tests/e2e/api/schemathesis.sh "$binary" "$venv/bin/st"

echo "== e2e: console (Debian's chromium driven by playwright-core from npm)"
bash tests/e2e/console/run.sh "$binary"
