#!/usr/bin/env bash
# End-to-end: the console in a real browser. Starts `bridle serve` on a free port with a
# temporary SQLite store, the bundled configuration and a fresh HS256 secret, mints an
# operator's and a requester's token with `bridle token issue`, and runs console.test.mjs
# (node's test runner; playwright-core driving Debian's chromium). Screenshots at 390 and
# 1280 px land in $BRIDLE_E2E_OUT (default tests/e2e/console/test-output, gitignored).
#
# Usage: run.sh PATH_TO_BRIDLE_BINARY
# Installs what is missing: Debian's chromium, nodejs and npm (apt), a Korean font for the
# screenshots, and playwright-core with `npm ci` (pinned in package-lock.json; it downloads no
# browser).
set -euo pipefail

binary="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
out="${BRIDLE_E2E_OUT:-$here/test-output}"

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
fc-list 2>/dev/null | grep -qi nanum || missing+=(fonts-nanum)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== console e2e: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

(cd "$here" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)

work="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export BRIDLE_JWT_SECRET
BRIDLE_JWT_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
"$binary" serve --db "sqlite://$work/bridle.db" --listen "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
server=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do
  curl -sf "$base/healthz" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
  sleep 0.1
done

token() {
  "$binary" token issue --subject "$1" --tenant tenant-a --services checkout --scopes "$2" --ttl 1h
}
export BRIDLE_URL="$base" BRIDLE_E2E_OUT="$out"
BRIDLE_OPERATOR_TOKEN="$(token operator-2 approval:grant,audit:read,runs:read,runs:start)"
BRIDLE_REQUESTER_TOKEN="$(token requester-1 service:read,service:scale,runs:start,runs:read)"
export BRIDLE_OPERATOR_TOKEN BRIDLE_REQUESTER_TOKEN

rm -rf "$out"
mkdir -p "$out"
status=0
(cd "$here" && node --test --test-concurrency=1 console.test.mjs) || status=$?
if [ "$status" -ne 0 ]; then
  echo "console e2e: FAILED (server log below)"
  tail -n 40 "$work/serve.log"
fi
echo "console e2e: screenshots in $out ($(find "$out" -name '*.png' | wc -l) files)"
exit "$status"
