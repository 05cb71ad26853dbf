#!/usr/bin/env bash
# Benchmark (not a test): `turnlake sql "SELECT * FROM turns" --out
# turns.parquet` streams, so its peak RSS barely grows with the lake. Builds
# a synthetic mini-coder lake at 1x and 4x MINI trajectories, writes every
# turn to Parquet, and prints each run's wall time, peak RSS and rows, then
# the 4x/1x peak ratio (the goal: at most 1.2).
# Usage: bench/sql_out.sh [MINI] [WORKDIR]   (the reference scale is 396382)
# PROFILE=debug reuses the test build; BIN=path runs that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
MINI=${1:-20000}; ROOT=${2:-$(mktemp -d)}
for scale in 1 4; do
  WORK="$ROOT/x$scale"
  . bench/common.sh
  "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs 1 --samples-per-run 1 \
    --mini-coder $((MINI * scale)) --mswea 0 > /dev/null
  "$BIN" --lake "$WORK/lake" ingest mini-coder "$WORK/corpus/mini-coder" > /dev/null
  rm -rf "$WORK/corpus"
  phase "sql_out_x$scale" "$BIN" --lake "$WORK/lake" sql "SELECT * FROM turns" --out "$WORK/turns.parquet"
  rows=$("$BIN" --lake "$WORK/lake" sql --format csv "SELECT count(*) AS n FROM turns" | tail -1)
  echo "    x$scale: $rows turns, $(du -m "$WORK/turns.parquet" | cut -f1) MB of Parquet"
done
read -r _ kb1 < "$ROOT/x1/sql_out_x1.time"
read -r _ kb4 < "$ROOT/x4/sql_out_x4.time"
awk -v a="$kb1" -v b="$kb4" 'BEGIN { printf "peak RSS 4x / 1x: %.2f\n", b / a }'
