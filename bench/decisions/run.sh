#!/bin/sh
# Reproduces the "Durable audited decisions" figures of BENCHMARKS.md:
#   CARGO_TARGET_DIR=/var/tmp/bridle-bench-target cargo build --release -p bridle-cli
#   bench/decisions/run.sh > decisions.jsonl   (BRIDLE=path/to/bridle, PG=postgres://…, SECONDS_PER_RUN=5)
# Durable audited decisions/s: SQLite NORMAL/FULL and PostgreSQL synchronous_commit on/off,
# group commit (batch 64) vs none, 128 callers; then 1 and 2 replicas on one PostgreSQL, callers
# over 1 and 2 tenants (issue 23, point 4).
B=${BRIDLE:-/var/tmp/bridle-bench-target/release/bridle}
S=${SECONDS_PER_RUN:-5}
PG=${PG:-postgres://postgres@127.0.0.1:5432/test}
DIR=$(mktemp -d /var/tmp/bridle-bench.XXXXXX)
run() { echo "## $*"; "$B" bench decisions --json --seconds "$S" "$@"; }
n=0
fresh_pg() { n=$((n+1)); psql "$PG" -qc "DROP SCHEMA IF EXISTS bench_$n CASCADE; CREATE SCHEMA bench_$n" >/dev/null 2>&1; echo "$PG?options[search_path]=bench_$n$1"; }
for sync in normal full; do
  for batch in 64 0; do
    run --store "sqlite://$DIR/s-$sync-$batch.db?synchronous=$sync" --batch $batch --concurrency 128
  done
  run --store "sqlite://$DIR/s-$sync-seq.db?synchronous=$sync" --batch 0 --concurrency 1
done
for sc in on off; do
  for batch in 64 0; do
    run --store "$(fresh_pg "&options[synchronous_commit]=$sc")" --batch $batch --concurrency 128
  done
  run --store "$(fresh_pg "&options[synchronous_commit]=$sc")" --batch 0 --concurrency 1
done
for tenants in 1 2; do
  for replicas in 1 2; do
    run --store "$(fresh_pg "")" --concurrency 128 --replicas $replicas --tenants $tenants
  done
done
for batch in 64 0; do
  run --store "$(fresh_pg "")" --batch $batch --concurrency 128 --replicas 2
  # two processes on one schema, 64 callers each
  U=$(fresh_pg "")
  echo "## two processes batch $batch"
  "$B" bench decisions --json --seconds "$S" --store "$U" --batch $batch --concurrency 64 &
  "$B" bench decisions --json --seconds "$S" --store "$U" --batch $batch --concurrency 64
  wait
done
i=1; while [ $i -le $n ]; do psql "$PG" -qc "DROP SCHEMA IF EXISTS bench_$i CASCADE" >/dev/null 2>&1; i=$((i+1)); done
rm -rf "$DIR"
