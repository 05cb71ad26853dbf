#!/usr/bin/env bash
# Not a test: the reference build on SCALE x the synthetic reference corpus,
# then a digest of every lake table's content (its rows as CSV, order and the
# work folder's path that evals record left out) and of every export's bytes.
# Two binaries that print the same digests built the same lake and exports:
# the check that a refactor left behaviour unchanged.
# Usage: bench/digests.sh [SCALE] [WORKDIR]    (SCALE default 0.05)
# PROFILE=debug reuses the test build; BIN=path runs that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-0.05}; WORK=${2:-$(mktemp -d)}
. bench/common.sh
runs=$(awk -v s="$SCALE" 'BEGIN { n = int(200 * s + 0.5); print n < 1 ? 1 : n }')
mini=$(awk -v s="$SCALE" 'BEGIN { n = int(396382 * s + 0.5); print n < 1 ? 1 : n }')
L=(--lake "$WORK/lake")
phase synth "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$runs" --samples-per-run 100 --mini-coder "$mini" --mswea 0
phase ingest_albedo "$BIN" "${L[@]}" ingest albedo "$WORK/corpus/albedo"
phase ingest_mini_coder "$BIN" "${L[@]}" ingest mini-coder "$WORK/corpus/mini-coder"
phase credit "$BIN" "${L[@]}" credit
phase select "$BIN" "${L[@]}" select
phase mix "$BIN" "${L[@]}" mix
phase validate "$BIN" "${L[@]}" validate
phase export_sft "$BIN" "${L[@]}" export sft --out "$WORK/sft.jsonl"
phase export_sft_parquet "$BIN" "${L[@]}" export sft --format parquet --out "$WORK/sft.parquet"
phase scorer_features "$BIN" "${L[@]}" scorer features
phase stats "$BIN" "${L[@]}" stats --format json

echo "== digests"
# A table's content digest: each CSV line hashed (blake2b, 64 bits) and the
# hashes summed, so the order Parquet files hold the rows in does not count
# and nothing is sorted or kept on disk; the work folder's path is masked.
digest_lines() {
  python3 -c '
import hashlib, sys
work = sys.argv[1].encode()
total = n = 0
for line in sys.stdin.buffer:
    h = hashlib.blake2b(line.replace(work, b"WORK"), digest_size=8).digest()
    total = (total + int.from_bytes(h, "little")) % (1 << 64)
    n += 1
print(n - 1, format(total, "016x"))
' "$WORK"
}
tables=$(ls "$WORK/lake" | grep -v '^_' | sort)
for t in $tables; do
  if out=$("$BIN" "${L[@]}" sql --format csv "SELECT * FROM $t" 2> "$WORK/$t.err" | digest_lines); then
    read -r lines sum <<< "$out"
    printf '%-20s %10d csv lines  %s\n' "$t" "$lines" "$sum"
  else
    printf '%-20s %s\n' "$t" "(no table)"
  fi
done
for f in sft.jsonl sft.parquet stats.out; do
  [ -e "$WORK/$f" ] && printf '%-20s %10s            %s\n' "$f" "file" "$(sha256sum < "$WORK/$f" | cut -c1-16)"
done
