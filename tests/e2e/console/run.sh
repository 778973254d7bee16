#!/usr/bin/env bash
# End-to-end: the console in a real browser. Starts three `bridle serve` on free ports, each
# with a temporary SQLite store and one fresh HS256 secret: the bundled checkout configuration,
# and the fab example twice with a scripted model (a rejected then approved plan; a choice
# between causes). Mints the tokens with `bridle token issue`, writes two replay reports (`bridle
# demo fab` into a SQLite file, then `bridle replay --report` on one scripted model and `--ab` on
# two) for the Drift view's report viewer, and runs every *.test.mjs here
# (node's test runner; playwright-core driving Debian's chromium). Screenshots at 390 and
# 1280 px land in $BRIDLE_E2E_OUT (default tests/e2e/console/test-output, gitignored).
#
# Usage: run.sh PATH_TO_BRIDLE_BINARY   (BRIDLE_E2E_ONLY=./desk.test.mjs runs one file)
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
repo="$(cd "$here/../../.." && pwd)"

servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

export BRIDLE_JWT_SECRET
BRIDLE_JWT_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"

# serve NAME [CONFIG]: `bridle serve` on a free port with its own SQLite file; sets `url`. (Not
# called in a command substitution: the server's pid must land in this shell's `servers`.)
url=""
serve() {
  local name="$1" port
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$binary" serve ${2:+--config "$2"} --db "sqlite://$work/$name.db" --listen "127.0.0.1:$port" \
    >"$work/$name.log" 2>&1 &
  servers+=($!)
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
    kill -0 "${servers[-1]}" 2>/dev/null || { cat "$work/$name.log" >&2; return 1; }
    sleep 0.1
  done
  url="http://127.0.0.1:$port"
}

# The fab example with a scripted model: the Advisor's first plan is rejected, the second approved.
fab_config() {
  local dir="$work/fab-$1"
  cp -r "$repo/examples/fab" "$dir"
  printf '\n[llm]\nprovider = "scripted"\nscript = "scripts/%s.toml"\n' "$1" >>"$dir/bridle.toml"
  echo "$dir/bridle.toml"
}

token() {
  "$binary" token issue --subject "$1" --tenant "$2" --services "$3" --scopes "$4" --ttl 1h
}

serve checkout
BRIDLE_URL="$url"
serve fab "$(fab_config reject_regenerate_reapprove)"
BRIDLE_FAB_URL="$url"
serve fab-choice "$(fab_config diagnosis_candidates_need_human)"
BRIDLE_FAB_CHOICE_URL="$url"
# The checkout example with a scripted chat model (chat_script.toml), for chat.test.mjs.
chat_dir="$work/chat-checkout"
cp -r "$repo/examples/checkout" "$chat_dir"
printf '\n[llm]\nprovider = "scripted"\nscript = "%s"\n' "$here/chat_script.toml" >>"$chat_dir/bridle.toml"
serve chat "$chat_dir/bridle.toml"
BRIDLE_CHAT_URL="$url"
BRIDLE_CHAT_TOKEN="$(token requester-1 tenant-a checkout service:read,service:scale,chat:use)"
export BRIDLE_CHAT_URL BRIDLE_CHAT_TOKEN
BRIDLE_OPERATOR_TOKEN="$(token operator-2 tenant-a checkout approval:grant,audit:read,runs:read,runs:start,kill:set,kill:lift)"
BRIDLE_REQUESTER_TOKEN="$(token requester-1 tenant-a checkout service:read,service:scale,runs:start,runs:read)"
fab_services="etch-01,cvd-02"
BRIDLE_FAB_AGENT_TOKEN="$(token advisor-agent fab-1 "$fab_services" equipment:read,equipment:tune,equipment:maintain,runs:start,runs:read)"
BRIDLE_FAB_OPERATOR_TOKEN="$(token operator-kim fab-1 "$fab_services" approval:grant,runs:start,runs:read,audit:read,feedback:write)"
export BRIDLE_URL BRIDLE_FAB_URL BRIDLE_FAB_CHOICE_URL BRIDLE_E2E_OUT="$out"
export BRIDLE_OPERATOR_TOKEN BRIDLE_REQUESTER_TOKEN BRIDLE_FAB_AGENT_TOKEN BRIDLE_FAB_OPERATOR_TOKEN

# Replay reports of seed 000's fab scenarios: one model, and an A/B pair (scripted models).
scripts="$repo/examples/fab/scripts"
replay=(replay --config "$repo/examples/fab/bridle.toml" --tenant fab-1 --db "sqlite://$work/replay.db")
# quiet LOG ARGS...: the binary with its output in $work/LOG.log, shown when it fails.
quiet() {
  local log="$work/$1.log"
  shift
  "$binary" "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
}
quiet replay-demo demo fab --db "sqlite://$work/replay.db"
quiet replay-one "${replay[@]}" --model "$scripts/reject_regenerate_reapprove.toml" --report "$work/replay"
quiet replay-ab "${replay[@]}" --ab "$scripts/reject_regenerate_reapprove.toml" "$scripts/etch_delta_rejected.toml" \
  --report "$work/replay-ab"
export BRIDLE_REPLAY_REPORT="$work/replay.json" BRIDLE_REPLAY_AB_REPORT="$work/replay-ab.json"

rm -rf "$out"
mkdir -p "$out"
status=0
(cd "$here" && node --test --test-concurrency=1 ${BRIDLE_E2E_ONLY:-./*.test.mjs}) || status=$?
if [ "$status" -ne 0 ]; then
  echo "console e2e: FAILED (server logs below)"
  for log in "$work"/*.log; do echo "-- $log"; tail -n 30 "$log"; done
fi
echo "console e2e: screenshots in $out ($(find "$out" -name '*.png' | wc -l) files)"
exit "$status"
