#!/usr/bin/env bash
# End-to-end: schemathesis against `/openapi.json` of a real `bridle serve`.
#
# Starts the server on a free port with a temporary SQLite store and a fresh HS256 secret, then
# runs schemathesis twice: as requester-1 (tools, calls, guard, check, runs with their SSE events,
# decisions; approvals answer 403) and as operator-2 with the approval, audit, metrics, feedback
# and chat scopes (the desk, the audit log, feedback on decisions, chat turns on the command model
# the bundled configuration's chat runs on). Every check
# of the pinned version (`--checks all`), among them: no 5xx, every status code, response body and
# content type as documented, the request schemas said truthfully (schema-valid requests
# accepted, schema-violating ones refused), no route answering without its token.
#
# Usage: schemathesis.sh PATH_TO_BRIDLE_BINARY PATH_TO_ST
# BRIDLE_E2E_EXAMPLES (default 25) bounds the cases per operation and phase; BRIDLE_E2E_SEED
# (default 1) fixes generation so CI is repeatable: set another to explore.
set -euo pipefail

binary="$(realpath "$1")"
st="$(realpath "$2")"
examples="${BRIDLE_E2E_EXAMPLES:-25}"
seed="${BRIDLE_E2E_SEED:-1}"

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

echo "-- openapi-spec-validator on /openapi.json"
curl -sf "$base/openapi.json" > "$work/openapi.json"
"$(dirname "$st")/openapi-spec-validator" "$work/openapi.json"

token() {
  "$binary" token issue --subject "$1" --tenant tenant-a --services checkout --scopes "$2" --ttl 1h
}
requester="$(token requester-1 service:read,service:scale,runs:start,runs:read)"
operator="$(token operator-2 approval:grant,audit:read,metrics:read,feedback:write,feedback:read,chat:use)"

run() {
  local who="$1" bearer="$2"
  echo "-- schemathesis as $who"
  # 40 requests/s stays under the server's bucket (50/s per tenant and subject), so the
  # operations are exercised rather than rate limited.
  # From the temporary directory: schemathesis keeps its example database (`.schemathesis/`) in
  # the working directory, and a run should depend on the seed alone, not on earlier runs.
  # `/v1/approvals/events` is a stream that stays open until the client leaves, which a
  # request-response fuzzer cannot read to its end; the server's tests and the console's
  # browser tests cover it.
  # No NUL in generated strings: Bridle refuses NUL in every stored string and key, which the
  # document says for each string field (`pattern`) but cannot say inside free-form JSON (tool
  # arguments, run inputs, resume values) without a recursive schema; the refusal itself is
  # tested by `cargo test` (`suite::bounds`). Every check runs.
  if ! (cd "$work" && "$st" run "$base/openapi.json" \
    --header "Authorization: Bearer $bearer" \
    --exclude-path /v1/approvals/events \
    --checks all \
    --generation-allow-x00 false \
    --max-examples "$examples" --seed "$seed" --rate-limit 40/s --workers 1 \
    --request-timeout 10 --no-color >"$work/$who.log" 2>&1); then
    cat "$work/$who.log"
    echo "schemathesis as $who: FAILED (server log below)"
    tail -n 50 "$work/serve.log"
    return 1
  fi
  grep -E "^(Test cases:|  [0-9]+ generated)|passed in|in [0-9.]+s =" "$work/$who.log" || true
}

status=0
run requester-1 "$requester" || status=1
run operator-2 "$operator" || status=1
exit "$status"
