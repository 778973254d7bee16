#!/usr/bin/env bash
# Deployment smoke test: two `bridle serve` replicas on one fresh PostgreSQL schema, driven the
# way deploy/README.md sets them up (configuration and secrets from the environment, a shared
# audit head log), and one approval loop run across both of them.
#
# Usage: deploy/smoke.sh [PATH_TO_BRIDLE]
#   PATH_TO_BRIDLE   the binary (default: $BRIDLE_BIN, else $CARGO_TARGET_DIR/debug/bridle,
#                    else target/debug/bridle)
#   BRIDLE_TEST_POSTGRES_URL   the database to work in (required; e.g.
#                    postgres://postgres@127.0.0.1:5432/test). The test creates the schema
#                    bridle_smoke_<random> there, points both replicas at it with
#                    `options[search_path]`, and drops it on exit, pass or fail.
#
# Checks, one line each: both replicas ready; a read through A executes; a change through A
# waits for approval; the requester cannot grant it; operator-2 grants it through B; the
# approved change executes once through A and a second use through B is refused
# (`approval_replayed`); the audit chain verifies over the API of each replica and with
# `bridle audit verify`, holding the events both replicas wrote; a rolling restart of B leaves A
# serving and B ready again; dropping the schema turns `/readyz` to 503 on both while `/healthz`
# stays 200. Prints `smoke: passed` at the end; exits non-zero at the first failure. Needs curl,
# psql and python3.
set -euo pipefail

fail() { echo "smoke: FAILED: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# The binary: a path given is taken from the caller's directory; the default from the checkout.
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="${1:-${BRIDLE_BIN:-}}"
if [ -z "$binary" ]; then
  target="${CARGO_TARGET_DIR:-target}"
  case "$target" in /*) ;; *) target="$root/$target" ;; esac
  binary="$target/debug/bridle"
fi
[ -x "$binary" ] || fail "no bridle binary at \`$binary\` (cargo build -p bridle-cli, or pass its path)"
binary="$(realpath "$binary")"
cd "$root"

for tool in curl psql python3; do
  command -v "$tool" >/dev/null || fail "\`$tool\` is not installed"
done
base_url="${BRIDLE_TEST_POSTGRES_URL:-}"
[ -n "$base_url" ] || fail "BRIDLE_TEST_POSTGRES_URL is unset (e.g. postgres://postgres@127.0.0.1:5432/test)"

work="$(mktemp -d)"
schema="bridle_smoke_$(python3 -c 'import secrets; print(secrets.token_hex(6))')"
pids=()
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  psql -q "$base_url" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE;" >/dev/null 2>&1 || true
  if [ "$status" -ne 0 ]; then
    for log in "$work"/replica-*.log; do
      [ -f "$log" ] || continue
      echo "--- last lines of $(basename "$log")" >&2
      tail -n 20 "$log" >&2
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- the deployment: one schema, one configuration, one environment for both replicas --------
psql -q "$base_url" -c "CREATE SCHEMA $schema" >/dev/null || fail "cannot create schema $schema"
sep='?'; case "$base_url" in *'?'*) sep='&' ;; esac
export BRIDLE_STORE_URL="${base_url}${sep}options[search_path]=${schema}"
export BRIDLE_CONFIG="$work/etc/bridle.toml"
export BRIDLE_JWT_SECRET
BRIDLE_JWT_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
export BRIDLE_AUDIT_SIGNING_KEY_FILE="$work/etc/audit.key"
export BRIDLE_AUDIT_HEADS="$work/shared/heads.jsonl"   # on a real deployment: a shared volume
export RUST_LOG=warn
unset BRIDLE_LISTEN BRIDLE_AUDIT_SIGNING_KEY
mkdir -p "$work/etc" "$work/shared"
cp -r examples/checkout/bridle.toml examples/checkout/policies examples/checkout/schemas "$work/etc/"
"$binary" audit keygen >"$BRIDLE_AUDIT_SIGNING_KEY_FILE" 2>/dev/null
chmod 600 "$BRIDLE_AUDIT_SIGNING_KEY_FILE"

# Starts replica NAME listening on ADDR (port 0: any free port); sets base_NAME to its URL.
start() {
  local name="$1" addr="$2" log="$work/replica-$1.log" line=""
  "$binary" serve --listen "$addr" >"$log" 2>&1 &
  pids+=("$!")
  eval "pid_$name=$!"
  for _ in $(seq 1 200); do
    line="$(grep -m1 -o 'http://[0-9.]*:[0-9]*' "$log" || true)"
    [ -n "$line" ] && break
    kill -0 "$!" 2>/dev/null || fail "replica $name exited at start-up"
    sleep 0.05
  done
  [ -n "$line" ] || fail "replica $name printed no address"
  eval "base_$name=$line"
}

# Stops replica NAME with SIGTERM and waits for it to drain and exit.
stop() {
  local pid
  pid="$(eval echo "\$pid_$1")"
  kill -TERM "$pid"
  wait "$pid" || fail "replica $1 exited with status $? on SIGTERM"
}

# Waits until URL/readyz answers 200.
wait_ready() {
  for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  fail "$1/readyz never answered 200"
}

# http METHOD URL TOKEN [BODY]: prints "STATUS BODY" on one line.
http() {
  local args=(-s -X "$1" -w '\n%{http_code}' -H "Authorization: Bearer $3")
  [ $# -ge 4 ] && args+=(-H 'Content-Type: application/json' --data "$4")
  local out
  out="$(curl "${args[@]}" "$2")"
  printf '%s %s\n' "${out##*$'\n'}" "${out%$'\n'*}"
}

# json EXPR: evaluates the Python expression EXPR over `s` (the status) and `b` (the parsed body)
# read from stdin ("STATUS BODY"); prints the result.
json() {
  python3 -c '
import json, sys
s, _, rest = sys.stdin.read().partition(" ")
try:
    b = json.loads(rest)
except ValueError:
    b = None
v = eval(sys.argv[1], {"s": int(s), "b": b})
print(json.dumps(v) if isinstance(v, (dict, list)) else v)
' "$1"
}

# expect WHAT ANSWER EXPR: passes when EXPR (over s and b) is true, else fails showing ANSWER.
expect() {
  [ "$(printf '%s' "$2" | json "$3")" = True ] || fail "$1: got ${2:0:3000}"
  ok "$1"
}

token() {
  "$binary" token issue --subject "$1" --tenant tenant-a --services checkout --scopes "$2" --ttl 15m
}

# --- two replicas --------------------------------------------------------------------------
start a 127.0.0.1:0
start b 127.0.0.1:0
# shellcheck disable=SC2154 # set by start
{ wait_ready "$base_a"; wait_ready "$base_b"; }
ok "replicas ready: A $base_a, B $base_b (schema $schema)"

requester="$(token requester-1 service:read,service:scale)"
operator="$(token operator-2 approval:grant,audit:read)"

read_call='{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}, "run_id": "smoke-1", "incident": "inc-smoke"}'
answer="$(http POST "$base_a/v1/calls" "$requester" "$read_call")"
expect "read through A executes" "$answer" 's == 200 and b["status"] == "ok" and b["result"]["replicas"] == 2'

change='{"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}, "run_id": "smoke-1", "incident": "inc-smoke"}'
answer="$(http POST "$base_a/v1/calls" "$requester" "$change")"
expect "change through A waits for approval" "$answer" \
  's == 200 and b["status"] == "rejected" and b["rejection"]["code"] == "approval_required" and bool(b["approval_id"])'
approval="$(printf '%s' "$answer" | json 'b["approval_id"]')"

answer="$(http POST "$base_b/v1/approvals/$approval/approve" "$requester" '{}')"
expect "the requester cannot grant it (B)" "$answer" 's == 403 and b["error"]["code"] == "forbidden"'

answer="$(http GET "$base_b/v1/approvals" "$operator")"
expect "B lists the request A created" "$answer" "s == 200 and any(a['id'] == '$approval' for a in b['approvals'])"

answer="$(http POST "$base_b/v1/approvals/$approval/approve" "$operator" '{}')"
expect "operator-2 grants it through B" "$answer" 's == 200 and b["approval"]["status"] == "granted"'

approved="$(printf '%s' "$change" | python3 -c "import json, sys; c = json.load(sys.stdin); c['approval_id'] = '$approval'; print(json.dumps(c))")"
answer="$(http POST "$base_a/v1/calls" "$requester" "$approved")"
expect "the approved change executes through A" "$answer" \
  's == 200 and b["status"] == "ok" and b["result"]["replicas"] == 3 and bool(b["job_id"])'

answer="$(http POST "$base_b/v1/calls" "$requester" "$approved")"
expect "a second use through B is refused" "$answer" \
  's == 200 and b["status"] == "rejected" and b["rejection"]["code"] == "approval_replayed"'

for name in a b; do
  base="$(eval echo "\$base_$name")"
  answer="$(http GET "$base/v1/audit/verify" "$operator")"
  expect "the audit chain verifies through ${name^^}" "$answer" 's == 200 and b["ok"] is True and b["verified"] >= 5'
done

answer="$(http GET "$base_b/v1/audit?limit=1000" "$operator")"
expect "the chain holds both replicas' events (A: read, request, execution; B: grant, replay refused)" "$answer" '
s == 200 and [(e["kind"], e["display"]) for e in b["events"] if e["kind"] in ("tool_call", "approval_granted")] == [
  ("tool_call", "executed"), ("tool_call", "waiting for approval"), ("approval_granted", "approved"),
  ("tool_call", "executed"), ("tool_call", "refused: approval_replayed")]'

# --- a rolling restart: B drains and comes back on its address while A keeps serving ---------
addr_b="${base_b#http://}"
stop b
answer="$(http POST "$base_a/v1/calls" "$requester" "$read_call")"
expect "A serves while B restarts" "$answer" 's == 200 and b["status"] == "ok"'
start b "$addr_b"
wait_ready "$base_b"
answer="$(http GET "$base_b/v1/approvals/$approval" "$operator")"
expect "B is ready again on $addr_b and sees the consumed approval" "$answer" \
  's == 200 and b["approval"]["status"] == "consumed"'

verified="$("$binary" audit verify 2>&1)" || fail "bridle audit verify: $verified"
case "$verified" in
  *"tenant-a: ok"*anchored*) ok "bridle audit verify: $(printf '%s' "$verified" | grep -m1 'tenant-a')" ;;
  *) fail "bridle audit verify: $verified" ;;
esac

# --- readiness follows the store --------------------------------------------------------------
psql -q "$base_url" -c "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE" >/dev/null
for name in a b; do
  base="$(eval echo "\$base_$name")"
  answer="$(curl -s -w '\n%{http_code}' "$base/readyz")"
  answer="${answer##*$'\n'} ${answer%$'\n'*}"
  expect "${name^^} /readyz is 503 once the schema is dropped" "$answer" \
    's == 503 and b["error"]["code"] == "store_unavailable" and "postgres" not in b["error"]["message"]'
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz")" = 200 ] || fail "${name^^} /healthz is not 200"
done
ok "/healthz stays 200 on both (alive, not ready)"

echo "smoke: passed"
