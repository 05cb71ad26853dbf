#!/usr/bin/env bash
# Benchmark and report (not a test): the whole reference pipeline on a
# synthetic corpus, printing time and peak memory per phase, then every
# reproduction table (the lake's figure beside the reference's, and the
# corpus's planted truth) into WORKDIR/reproduction.md.
# Usage: bench/reproduce.sh [EVAL_RUNS] [SAMPLES_PER_RUN] [MINI_CODER] [WORKDIR]
# The reference scale is 200 100 396382. PROFILE=debug reuses the test build;
# BIN=path runs that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-20}; SAMPLES=${2:-100}; MINI=${3:-20000}; WORK=${4:-$(mktemp -d)}
. bench/common.sh
LAKE="$WORK/lake"
phase synth "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$RUNS" --samples-per-run "$SAMPLES" --mini-coder "$MINI" --mswea 0
phase ingest_albedo "$BIN" --lake "$LAKE" ingest albedo "$WORK/corpus/albedo"
phase ingest_mini_coder "$BIN" --lake "$LAKE" ingest mini-coder "$WORK/corpus/mini-coder"
phase credit "$BIN" --lake "$LAKE" credit
phase stats "$BIN" --lake "$LAKE" stats --format markdown --truth "$WORK/corpus/truth.json" --plots "$WORK/plots"
phase select "$BIN" --lake "$LAKE" select
phase mix "$BIN" --lake "$LAKE" mix
phase validate "$BIN" --lake "$LAKE" validate
{
  echo "# Reproduction at $RUNS eval runs x $SAMPLES samples, $MINI mini-coder trajectories ($PROFILE build)"
  echo
  sed -n '/^## Reproduction/,$p' "$WORK/stats.out"
  for step in select mix validate; do
    echo "## $(grep -m1 '^Reproduction' "$WORK/$step.out")"
    echo
    sed -n '/^Reproduction/,/^$/p' "$WORK/$step.out" | tail -n +2
  done
} > "$WORK/reproduction.md"
echo "reproduction tables: $WORK/reproduction.md; plots: $WORK/plots"
