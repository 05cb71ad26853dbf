#!/usr/bin/env bash
# Benchmark (not a test): the local scorer and the verl export on a synthetic
# corpus, printing wall time and peak memory per phase and the held-out figures.
# Usage: bench/scorer.sh [EVAL_RUNS] [SAMPLES_PER_RUN] [MINI_CODER] [WORKDIR]
# The reference scale is 200 100 396382. PROFILE=debug reuses the test build;
# BIN=path runs that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-40}; SAMPLES=${2:-50}; MINI=${3:-2000}; WORK=${4:-$(mktemp -d)}
. bench/common.sh
L=(--lake "$WORK/lake")
phase synth "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$RUNS" --samples-per-run "$SAMPLES" --mini-coder "$MINI" --mswea 0
phase ingest_albedo "$BIN" "${L[@]}" ingest albedo "$WORK/corpus/albedo"
phase ingest_mini_coder "$BIN" "${L[@]}" ingest mini-coder "$WORK/corpus/mini-coder"
phase credit "$BIN" "${L[@]}" credit
PHASE_TAIL=1 phase scorer_features "$BIN" "${L[@]}" scorer features
PHASE_TAIL=2 phase scorer_fit "$BIN" "${L[@]}" scorer fit
phase scorer_eval "$BIN" "${L[@]}" scorer eval
PHASE_TAIL=1 phase scorer_label "$BIN" "${L[@]}" scorer label
PHASE_TAIL=3 phase export_verl "$BIN" "${L[@]}" export verl --out "$WORK/verl" --min-kappa 0
grep -E "held out|accuracy|AUC|kappa|Pearson|picks|loop verdict" "$WORK/scorer_eval.out" | sed 's/^/    /'
echo "planted ceiling (truth.json): $(python3 -c "import json; t = json.load(open('$WORK/corpus/truth.json'))['scorer']; print(f\"accuracy {t['planted_accuracy']:.3f}, AUC {t['planted_auc']:.3f} over {t['judgments']} answers\")")"
