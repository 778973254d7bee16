#!/bin/bash
# Issue 23, point 4: `bridle bench decisions` on PostgreSQL with 1 and 2 replicas, callers over 1
# and 2 tenants, each run on a fresh schema, with the machine's idle CPU share over the run (a
# run that leaves no CPU idle cannot gain from a second replica on the same machine).
#   bench/decisions/replicas.sh [BRIDLE...]   (PG=postgres://…, SECONDS_PER_RUN=5, CALLERS=128)
# Several binaries are run alternately, so a before/after shares the machine's state.
PG=${PG:-postgres://postgres@127.0.0.1:5432/test}
S=${SECONDS_PER_RUN:-5}
C=${CALLERS:-128}
[ $# -gt 0 ] || set -- "${BRIDLE:-/var/tmp/bridle-bench-target/release/bridle}"
cpu() { awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
n=0
for tenants in 1 2; do for replicas in 1 2; do for b in "$@"; do
  n=$((n+1)); schema=replicas_bench_$n
  psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >/dev/null 2>&1
  read -r idle0 all0 < <(cpu)
  out=$("$b" bench decisions --json --store "$PG?options[search_path]=$schema" --seconds "$S" \
    --concurrency "$C" --replicas "$replicas" --tenants "$tenants")
  read -r idle1 all1 < <(cpu)
  echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
l = d["latency_us"]
print("%s tenants=%d replicas=%d %.0f decisions/s p50 %.1f ms p99 %.1f ms idle %s%%" % (
    sys.argv[1], d["tenants"], d["replicas"], d["decisions_per_s"], l["p50"] / 1e3, l["p99"] / 1e3, sys.argv[2]))
' "$b" "$(( 100 * (idle1 - idle0) / (all1 - all0) ))"
  psql "$PG" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
done; done; done
