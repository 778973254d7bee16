#!/usr/bin/env bash
# Read tool calls per second over HTTP: `bridle serve` (release) in one process, wrk in another.
# Usage: bench/http/run.sh [STORE] [CONNECTIONS] [SECONDS]
#   STORE: `sqlite` (default: a fresh file under target/tmp/, WAL, audit appended per call) or `memory`.
# Needs wrk (Debian: `apt-get install wrk`) and a release build (`cargo build --release -p bridle-cli`).
set -euo pipefail
cd "$(dirname "$0")/../.."
store="${1:-sqlite}" conns="${2:-32}" secs="${3:-20}"
bin=target/release/bridle
work=$(mktemp -d target/tmp/http-bench.XXXXXX 2>/dev/null || { mkdir -p target/tmp && mktemp -d target/tmp/http-bench.XXXXXX; })
export BRIDLE_JWT_SECRET="bench-secret-bench-secret-bench-secret"
case "$store" in
  sqlite) db="sqlite://$work/bridle.db" ;;
  memory) db="memory" ;;
  *) echo "store must be sqlite or memory" >&2; exit 2 ;;
esac
# 400 principals: at 50 requests/s each, the default rate limit allows 20 000 requests/s in all.
for i in $(seq 1 400); do
  "$bin" token issue --subject "bench-$i" --tenant tenant-a --services checkout --scopes service:read --ttl 1h
done > "$work/tokens"
RUST_LOG="${RUST_LOG:-warn}" ${BENCH_WRAP:-} "$bin" serve --db "$db" --listen 127.0.0.1:18080 > "$work/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18080/healthz > /dev/null && break; sleep 0.1; done
TOKENS_FILE="$work/tokens" wrk -t1 -c"$conns" -d2s -s bench/http/calls.lua http://127.0.0.1:18080 > /dev/null  # warm-up
echo "one call: $(curl -s -H "Authorization: Bearer $(head -1 "$work/tokens")" http://127.0.0.1:18080/v1/calls \
  -d '{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}, "run_id": "bench"}' | head -c 160)"
TOKENS_FILE="$work/tokens" wrk -t1 -c"$conns" -d"${secs}s" --latency -s bench/http/calls.lua http://127.0.0.1:18080
metrics=$("$bin" token issue --subject prometheus --tenant ops --scopes metrics:read)
echo "gate verdicts (warm-up included):"
curl -s -H "Authorization: Bearer $metrics" http://127.0.0.1:18080/metrics | grep -E '^bridle_(gate_verdicts_total|http_requests_total)'
