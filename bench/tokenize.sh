#!/usr/bin/env bash
# Benchmark (not a test): tokens per second of `turnlake validate` on a mix,
# and of the Python `tokenizers` package on the same message texts with the
# same tokenizer.json (installed from PyPI into a venv if missing).
# Usage: bench/tokenize.sh [EVAL_RUNS] [SAMPLES_PER_RUN] [MINI_CODER] [WORKDIR]
# The defaults build a reference-size mix (about 41,000 rows); expect ~10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-200}; SAMPLES=${2:-100}; MINI=${3:-396382}; WORK=${4:-$(mktemp -d)}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/turnlake-target}"
PROFILE=${PROFILE:-release}
if [ "$PROFILE" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
BIN="$CARGO_TARGET_DIR/$PROFILE/turnlake"
mkdir -p "$WORK"; rm -rf "$WORK/corpus" "$WORK/lake"
L=(--lake "$WORK/lake")
"$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$RUNS" --samples-per-run "$SAMPLES" --mini-coder "$MINI" --mswea 0 > /dev/null
"$BIN" "${L[@]}" ingest albedo "$WORK/corpus/albedo" > /dev/null
"$BIN" "${L[@]}" ingest mini-coder "$WORK/corpus/mini-coder" > /dev/null
"$BIN" "${L[@]}" credit > /dev/null
"$BIN" "${L[@]}" select > /dev/null
"$BIN" "${L[@]}" mix > /dev/null
"$BIN" "${L[@]}" export sft --out "$WORK/mix.jsonl" > /dev/null
echo "turnlake validate ($(nproc) cores):"
"$BIN" "${L[@]}" validate 2>&1 | grep -E "rows,|tokens/s"
PY=python3
if ! $PY -c "import tokenizers" 2>/dev/null; then
  $PY -m venv "$WORK/venv" && "$WORK/venv/bin/pip" install --quiet tokenizers && PY="$WORK/venv/bin/python"
fi
$PY - "$WORK/mix.jsonl" data/tokenizer.json <<'PYEOF'
import json, sys, time
import tokenizers
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[2])
texts = [m["content"] for line in open(sys.argv[1]) for m in json.loads(line)["messages"]]
n, secs = 0, 0.0
for i in range(0, len(texts), 20000):  # chunks keep memory bounded
    t0 = time.perf_counter()
    encs = tok.encode_batch(texts[i:i + 20000], add_special_tokens=False)
    secs += time.perf_counter() - t0
    n += sum(len(e.ids) for e in encs)
print(f"python tokenizers {tokenizers.__version__} encode_batch: {len(texts)} messages, {n} tokens in {secs:.2f} s ({n / secs:.0f} tokens/s)")
PYEOF
