#!/usr/bin/env bash
# Benchmark (not a test): generate a synthetic corpus and ingest it, printing
# wall time, throughput and peak memory per phase.
# Usage: bench/synth_ingest.sh [EVAL_RUNS] [SAMPLES_PER_RUN] [MINI_CODER] [WORKDIR]
# The reference scale is 200 100 396382. PROFILE=debug reuses the test build;
# BIN=path runs that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-20}; SAMPLES=${2:-100}; MINI=${3:-20000}; WORK=${4:-$(mktemp -d)}
PHASE_TAIL=3
. bench/common.sh
phase synth "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$RUNS" --samples-per-run "$SAMPLES" --mini-coder "$MINI" --mswea 0
albedo_mb=$(du -sm "$WORK/corpus/albedo" | cut -f1); mini_mb=$(du -sm "$WORK/corpus/mini-coder" | cut -f1)
phase ingest_albedo "$BIN" --lake "$WORK/lake" ingest albedo "$WORK/corpus/albedo"
phase ingest_mini_coder "$BIN" --lake "$WORK/lake" ingest mini-coder "$WORK/corpus/mini-coder"
for p in ingest_albedo ingest_mini_coder; do
  secs=$(cut -d' ' -f1 "$WORK/$p.time")
  mb=$([ "$p" = ingest_albedo ] && echo "$albedo_mb" || echo "$mini_mb")
  trajs=$(grep -o 'new rows: [0-9]*' "$WORK/$p.out" | grep -o '[0-9]*$')
  awk -v n="$p" -v s="$secs" -v mb="$mb" -v t="$trajs" 'BEGIN { printf "%s: %.1f MB/s on disk input, %.0f trajectories/s\n", n, mb / s, t / s }'
done
