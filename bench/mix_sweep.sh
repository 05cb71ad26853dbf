#!/usr/bin/env bash
# Benchmark (not a test): the default proxy of `turnlake mix sweep` on a
# planted corpus (`synth --plant-mixture`) at SCALE times the reference
# (200 eval runs x 100 samples, 396,382 mini-coder runs at 1). Builds the
# lake, then sweeps the planted grid with data/train.toml and the default
# budget, and prints the table (the planted best is escape_mini and
# finish_mini half and half), the time to prepare and per candidate, and
# the sweep's peak RSS.
# Usage: bench/mix_sweep.sh [SCALE] [WORKDIR]
# PROFILE=debug reuses the test build; BIN=path runs that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-1}; WORK=${2:-$(mktemp -d)}
. bench/common.sh
runs=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 200 * s }')
mini=$(awk -v s="$SCALE" 'BEGIN { printf "%d", 396382 * s }')
phase synth "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$runs" --samples-per-run 100 \
  --mini-coder "$mini" --mswea 0 --plant-mixture
phase ingest_albedo "$BIN" --lake "$WORK/lake" ingest albedo "$WORK/corpus/albedo"
phase ingest_mini "$BIN" --lake "$WORK/lake" ingest mini-coder "$WORK/corpus/mini-coder"
for step in credit select mix; do phase "$step" "$BIN" --lake "$WORK/lake" "$step"; done
PHASE_TAIL=30 phase sweep "$BIN" --lake "$WORK/lake" mix sweep \
  --grid "escape_mini=1;finish_mini=1;escape_mini=0.5,finish_mini=0.5" --out "$WORK/sweep"
