#!/usr/bin/env bash
# Benchmark (not a test): `turnlake select` on an existing lake, locally and
# on a loopback Ballista cluster (a scheduler and two executors started here
# and stopped after), with wall time and peak RSS of each (and of the
# scheduler and executors), and whether the
# two runs wrote the same products.
# Usage: bench/cluster_select.sh LAKE     (e.g. the lake bench/reference.sh built)
# PROFILE=debug reuses the test build; BIN=path runs that binary.
set -euo pipefail
LAKE=$(realpath "$1"); WORK=$(mktemp -d)
cd "$(dirname "$0")/.."
. bench/common.sh
digest() {
  "$BIN" --lake "$LAKE" sql --format csv "SELECT mix, count(*) AS n, md5(string_agg(row_id || ':' || CAST(train_turns AS VARCHAR), ',' ORDER BY row_id)) AS d FROM (SELECT * FROM sft_credit UNION ALL SELECT * FROM escape_duel UNION ALL SELECT * FROM escape_mini UNION ALL SELECT * FROM finish_mini) GROUP BY mix ORDER BY mix"
}
phase select_local "$BIN" --lake "$LAKE" select
digest > "$WORK/local.csv"

"$BIN" cluster scheduler --bind 127.0.0.1:0 > "$WORK/scheduler.out" 2> "$WORK/scheduler.log" &
pids=($!)
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
until grep -qs "listening on" "$WORK/scheduler.out"; do sleep 0.1; done
URL=$(grep -o 'df://[^ ]*' "$WORK/scheduler.out")
for i in 1 2; do
  "$BIN" cluster executor --scheduler "$URL" > "$WORK/executor-$i.out" 2> "$WORK/executor-$i.log" &
  pids+=($!)
  until grep -qs "ready" "$WORK/executor-$i.out"; do sleep 0.1; done
done
phase select_cluster "$BIN" --lake "$LAKE" --cluster "$URL" select
digest > "$WORK/cluster.csv"
names=(scheduler executor-1 executor-2)
for i in 0 1 2; do
  echo "${names[$i]}: peak RSS $(awk '/VmHWM/ { print int($2 / 1024) }' "/proc/${pids[$i]}/status") MiB"
done
if cmp -s "$WORK/local.csv" "$WORK/cluster.csv"; then echo "products: identical"; else echo "products: DIFFER"; diff "$WORK/local.csv" "$WORK/cluster.csv" || true; fi
