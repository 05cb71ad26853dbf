#!/usr/bin/env bash
# Benchmark (not a test): the reference pipeline on SCALE x the reference
# corpus (200 eval runs x 100 samples, 396,382 mini-coder trajectories), with
# time, throughput and peak RSS per phase and, measured in the same run on
# the same files, its peers: DuckDB 2.0.1 doing the mini-coder extraction
# (bench/peers/duckdb_mini_coder.sql) and the stats queries over the lake's
# Parquet (bench/peers/stats/*.sql; both sides, best of 3 runs), and Python
# `tokenizers` doing validate's work on the SFT export
# (bench/peers/tokenize_peer.py; it and validate run twice each, in turn, and
# each side's faster run stands); then the lake's size against its input.
# Prints one markdown table.
# Usage: bench/reference.sh [SCALE] [WORKDIR]      SCALE: 0.25, 0.5, 1 (default 1)
#        SCALES="0.25 0.5 1" bench/reference.sh [SCALE] [WORKDIR]   (SCALE unused)
#          repeats the turnlake phases at each scale instead and prints time
#          and peak RSS per phase per scale, its growth against the scale
#          and the straight line through its times (linearity).
# PROFILE=debug reuses the test build; BIN=path runs that binary. The peers
# are installed once into ${TURNLAKE_TOOLS:-~/.cache/turnlake-tools}/bench-py.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-1}; WORK=${2:-$(mktemp -d)}
. bench/common.sh
TOOLS=${TURNLAKE_TOOLS:-$HOME/.cache/turnlake-tools}
PY="$TOOLS/bench-py/bin/python"; export PYTHONDONTWRITEBYTECODE=1
# The peers, pinned: tokenizers is the version of the crate turnlake links (Cargo.lock).
if ! "$PY" -c 'import duckdb, tokenizers; assert (duckdb.__version__, tokenizers.__version__) == ("2.0.1", "0.23.2")' 2>/dev/null; then
  python3 -m venv "$TOOLS/bench-py"
  "$TOOLS/bench-py/bin/pip" install --quiet duckdb==2.0.1 tokenizers==0.23.2
fi

secs() { tail -n 1 "$WORK/$1.time" | cut -d' ' -f1; }
# Peak RSS of a phase: MB below 1 GB, else GB.
rss() { tail -n 1 "$WORK/$1.time" | awk '{ kb = $2; if (kb < 1048576) printf "%.0f MB", kb / 1024; else printf "%.2f GB", kb / 1048576 }'; }
# N units over S seconds, as "12.3k units/s".
rate() { awk -v n="$1" -v s="$2" -v u="$3" 'BEGIN { r = n / (s > 0 ? s : 0.001); f = r >= 1e6 ? sprintf("%.2fM", r / 1e6) : r >= 1e3 ? sprintf("%.1fk", r / 1e3) : sprintf("%.0f", r); printf "%s %s/s", f, u }'; }
# Peer time over turnlake time: above 1, turnlake is faster.
ratio() { awk -v t="$1" -v p="$2" 'BEGIN { r = p / (t > 0 ? t : 0.001); printf "%.2fx (turnlake %s)", r, (r >= 1 ? "faster" : "slower") }'; }
mb() { du -sm "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }' || true; }
# A phase (common.sh) with stderr in its output too (validate reports tokens/s
# there) whose failure is recorded in WORK/NAME.failed, and shown, instead of
# ending the run.
step() {
  local name=$1; shift; rm -f "$WORK/$name.failed"
  # shellcheck disable=SC2016  # the inner bash expands them
  phase "$name" bash -c '"${@:2}" 2>&1 || { echo "exit $?" > "$1"; }' _ "$WORK/$name.failed" "$@"
  if [ -e "$WORK/$name.failed" ]; then echo "  $name FAILED ($(cat "$WORK/$name.failed")):"; tail -n 3 "$WORK/$name.out" | sed 's/^/    /'; fi
}

# Synthesize SCALE x the reference corpus into WORK and run the turnlake phases on it.
pipeline() {
  local scale=$1 runs mini
  runs=$(awk -v s="$scale" 'BEGIN { n = int(200 * s + 0.5); print n < 1 ? 1 : n }')
  mini=$(awk -v s="$scale" 'BEGIN { n = int(396382 * s + 0.5); print n < 1 ? 1 : n }')
  rm -rf "$WORK/corpus" "$WORK/lake"
  LAKE="$WORK/lake"; L=(--lake "$LAKE")
  echo "== scale $scale: $runs eval runs x 100 samples, $mini mini-coder trajectories ($PROFILE build, $WORK)"
  phase synth "$BIN" synth --out "$WORK/corpus" --seed 1 --eval-runs "$runs" --samples-per-run 100 --mini-coder "$mini" --mswea 0
  step ingest_albedo "$BIN" "${L[@]}" ingest albedo "$WORK/corpus/albedo"
  step ingest_mini_coder "$BIN" "${L[@]}" ingest mini-coder "$WORK/corpus/mini-coder"
  step credit "$BIN" "${L[@]}" credit
  step stats "$BIN" "${L[@]}" stats --format markdown
  step select "$BIN" "${L[@]}" select
  step mix "$BIN" "${L[@]}" mix
  step validate "$BIN" "${L[@]}" validate
  step export_sft "$BIN" "${L[@]}" export sft --out "$WORK/sft.jsonl"
}
PHASES="ingest_albedo ingest_mini_coder credit stats select mix validate export_sft"

# The least-squares line through "scale seconds" points: time = fixed + per
# 1x times scale, and the point farthest off it, as a share of its measured
# time. A step's start (opening the lake, planning) is the fixed part,
# which makes the first-to-last growth read below 1 at small scales.
line_fit() {
  awk 'BEGIN { w = -1 } { s[NR] = $1; t[NR] = $2; ms += $1; mt += $2 }
    END {
      n = NR; ms /= n; mt /= n
      for (i = 1; i <= n; i++) { sxy += (s[i] - ms) * (t[i] - mt); sxx += (s[i] - ms) ^ 2 }
      b = sxx > 0 ? sxy / sxx : 0; a = mt - b * ms
      for (i = 1; i <= n; i++) {
        f = a + b * s[i]; d = (t[i] - f) / (t[i] > 0 ? t[i] : 0.001)
        if (d < 0 ? -d > w : d > w) { w = d < 0 ? -d : d; wd = d; ws = s[i] }
      }
      printf "%.2f s + %.2f s per 1× (%s×: %+.0f%%)", a, b, ws, wd * 100
    }'
}

if [ -n "${SCALES:-}" ]; then
  base=$WORK; read -r -a scales <<< "$SCALES"
  for s in "${scales[@]}"; do WORK="$base/scale-$s"; mkdir -p "$WORK"; pipeline "$s"; done
  echo
  echo "| phase |$(for s in "${scales[@]}"; do printf ' %s× |' "$s"; done) growth ÷ scale, first to last (1.00: linear) | straight line through the times: fixed + per 1× (the point farthest off it: measured − line, share of measured) |"
  echo "|---|$(for s in "${scales[@]}"; do printf -- '---|'; done)---|---|"
  for p in $PHASES; do
    row="| $p |"; first=""; last=""; points=""
    for s in "${scales[@]}"; do
      WORK="$base/scale-$s"; t=$(secs "$p"); row+=" ${t} s, $(rss "$p") |"
      first=${first:-$t}; last=$t; points+="$s $t"$'\n'
    done
    row+=$(awk -v a="$first" -v b="$last" -v sa="${scales[0]}" -v sb="${scales[-1]}" \
      'BEGIN { printf " %.2f |", (b / (a > 0 ? a : 0.001)) / (sb / sa) }')
    echo "$row $(printf '%s' "$points" | line_fit) |"
  done
  row="| reference build: the phases above |"; totals=()
  for s in "${scales[@]}"; do
    totals+=("$(for p in $PHASES; do cat "$base/scale-$s/$p.time"; done | awk '{ s += $1 } END { printf "%.2f", s }')")
    row+=" ${totals[-1]} s |"
  done
  echo "$row$(awk -v a="${totals[0]}" -v b="${totals[-1]}" -v sa="${scales[0]}" -v sb="${scales[-1]}" \
    'BEGIN { printf " %.2f |", (b / (a > 0 ? a : 0.001)) / (sb / sa) }') $(for i in "${!scales[@]}"; do echo "${scales[$i]} ${totals[$i]}"; done | line_fit) |"
  exit 0
fi

pipeline "$SCALE"
# The counts throughput is measured in (not timed).
read -r turns albedo_turns mix_rows < <("$BIN" "${L[@]}" sql --format csv \
  "SELECT (SELECT count(*) FROM turns) AS a, (SELECT count(*) FROM turns WHERE source = 'albedo') AS b, (SELECT count(*) FROM sft_mix) AS c" \
  | tail -n 1 | tr ',' ' ') || true
turns=${turns:-0}; albedo_turns=${albedo_turns:-0}; mix_rows=${mix_rows:-0}
new() { sed -n "s/^new rows: \([0-9]*\) trajectories, \([0-9]*\) turns.*/\\$2/p" "$WORK/$1.out"; }

# A stats query (well under a second), run 3 times; its fastest successful
# run stands as NAME (on a shared 2-core machine one run's time varies by a
# third). NAME fails only when every run failed.
best_of_3() {
  local name=$1; shift
  for r in 1 2 3; do step "${name}_run$r" "$@"; done
  local fastest
  fastest=$(for r in 1 2 3; do
    [ -e "$WORK/${name}_run$r.failed" ] || echo "$(secs "${name}_run$r") $r"
  done | LC_ALL=C sort -g | head -n 1 | cut -d' ' -f2)
  rm -f "$WORK/$name.time" "$WORK/$name.out" "$WORK/$name.failed"
  fastest=${fastest:-1}
  for ext in time out failed; do
    if [ -e "$WORK/${name}_run$fastest.$ext" ]; then cp "$WORK/${name}_run$fastest.$ext" "$WORK/$name.$ext"; fi
  done
}

# The stats queries through turnlake sql, then DuckDB over the same files.
for f in bench/peers/stats/*.sql; do
  q=$(basename "$f" .sql)
  best_of_3 "sql_$q" "$BIN" "${L[@]}" sql --format csv "$(sed -E '/^\s*--/d; s/\{(\w+)\}/\1/g' "$f")"
done
# The peers.
step duckdb_ingest "$PY" bench/peers/duckdb_run.py bench/peers/duckdb_mini_coder.sql "$WORK/corpus/mini-coder" "$WORK/duckdb-mini-coder"
for f in bench/peers/stats/*.sql; do
  q=$(basename "$f" .sql)
  best_of_3 "duckdb_$q" "$PY" bench/peers/duckdb_stats.py "$LAKE" "$f" "$WORK/duckdb_$q.csv"
done
step tokenizers "$PY" bench/peers/tokenize_peer.py "$WORK/sft.jsonl" data/tokenizer.json
# validate and its peer once more each, taken in turn: each side's faster run
# stands in the ratio (one run of a minute swings by a tenth here).
step validate_run2 "$BIN" "${L[@]}" validate
step tokenizers_run2 "$PY" bench/peers/tokenize_peer.py "$WORK/sft.jsonl" data/tokenizer.json
# The run of each side that stands: the successful one with the higher rate.
val_run=$(for r in validate validate_run2; do
  [ -e "$WORK/$r.failed" ] || sed -n "s/^tokenized [0-9]* tokens in \([0-9.]*\) s.*/\1 $r/p" "$WORK/$r.out"
done | LC_ALL=C sort -g | head -n 1 | cut -d' ' -f2)
val_run=${val_run:-validate}
read -r tok tok_secs < <(sed -n 's/^tokenized \([0-9]*\) tokens in \([0-9.]*\) s.*/\1 \2/p' "$WORK/$val_run.out") || true
tok=${tok:-0}; tok_secs=${tok_secs:-0}
py_run=$(for r in tokenizers tokenizers_run2; do
  [ -e "$WORK/$r.failed" ] || echo "$(sed -n 's/^whole check: .*, \([0-9]*\) tokens\/s/\1/p' "$WORK/$r.out") $r"
done | LC_ALL=C sort -g -r | head -n 1 | cut -d' ' -f2)
py_run=${py_run:-tokenizers}
agreement=$("$PY" bench/peers/compare_ingest.py "$LAKE" "$WORK/duckdb-mini-coder" 2>&1 || true)

echo
echo "| phase | time | throughput | peak RSS | peer on the same files | ratio |"
echo "|---|---|---|---|---|---|"
# A row: label, phase, throughput, peer phase, peer text, ratio (a failed phase says so).
row() {
  local thr=$3 peer=${5:-} ratio=${6:-}
  if [ -e "$WORK/$2.failed" ]; then thr="FAILED ($(cat "$WORK/$2.failed"), see $WORK/$2.out)"; ratio=""; fi
  if [ -n "${4:-}" ] && [ -e "$WORK/$4.failed" ]; then peer="peer FAILED, see $WORK/$4.out"; ratio=""; fi
  echo "| $1 | $(secs "$2") s | $thr | $(rss "$2") | $peer | $ratio |"
}
albedo_mb=$(mb "$WORK/corpus/albedo"); mini_mb=$(mb "$WORK/corpus/mini-coder")
row "synth (input, not compared)" synth "$(rate "$((albedo_mb + mini_mb))" "$(secs synth)" MB)"
row "ingest albedo ($(new ingest_albedo 1) sides)" ingest_albedo \
  "$(rate "$(new ingest_albedo 1)" "$(secs ingest_albedo)" sides), $(rate "$albedo_mb" "$(secs ingest_albedo)" MB)"
row "ingest mini-coder ($(new ingest_mini_coder 1) trajectories, $(new ingest_mini_coder 2) turns)" ingest_mini_coder \
  "$(rate "$(new ingest_mini_coder 2)" "$(secs ingest_mini_coder)" turns), $(rate "$mini_mb" "$(secs ingest_mini_coder)" MB)" duckdb_ingest \
  "DuckDB, same extraction, 2 threads: $(secs duckdb_ingest) s, $(rss duckdb_ingest)" \
  "$(ratio "$(secs ingest_mini_coder)" "$(secs duckdb_ingest)")"
row credit credit "$(rate "$albedo_turns" "$(secs credit)" "albedo turns")"
row stats stats "$(rate "$albedo_turns" "$(secs stats)" "albedo turns")"
row select select "$(rate "$turns" "$(secs select)" turns)"
row "mix ($mix_rows rows)" mix "$(rate "$mix_rows" "$(secs mix)" rows)"
py_rate=$(sed -n 's/^whole check: .*, \([0-9]*\) tokens\/s/\1/p' "$WORK/$py_run.out")
py_encode=$(sed -n 's/^encode_batch only: .*, \([0-9]*\) tokens\/s/\1/p' "$WORK/$py_run.out")
py_bad=$(sed -n 's/.* \([0-9]*\) mismatches.*/\1/p' "$WORK/$py_run.out")
row "validate ($tok tokens; the faster of 2 runs)" "$val_run" "$(rate "$tok" "$tok_secs" tokens) (in its check)" "$py_run" \
  "Python tokenizers (the faster of 2 runs, taken in turn with validate's): $(rate "$py_rate" 1 tokens) whole check ($(rate "$py_encode" 1 tokens) encode_batch alone), $(secs "$py_run") s, $(rss "$py_run"), $py_bad mismatches" \
  "$(awk -v t="$tok" -v s="$tok_secs" -v p="$py_rate" 'BEGIN { r = (t / (s > 0 ? s : 0.001)) / (p > 0 ? p : 1); printf "%.2fx (turnlake %s)", r, (r >= 1 ? "faster" : "slower") }')"
row "export sft" export_sft "$(rate "$mix_rows" "$(secs export_sft)" rows), $(rate "$(mb "$WORK/sft.jsonl")" "$(secs export_sft)" MB)"
for f in bench/peers/stats/*.sql; do
  q=$(basename "$f" .sql)
  same=$("$PY" bench/peers/same_rows.py "$WORK/sql_$q.out" "$WORK/duckdb_$q.csv" || true)
  row "\`sql\`: $q, whole process" "sql_$q" "$(rate "$turns" "$(secs "sql_$q")" "lake turns")" "duckdb_$q" \
    "DuckDB process on the lake's Parquet: $(secs "duckdb_$q") s ($(sed -n 's/.* in \([0-9.]*\) s (in engine)/\1/p' "$WORK/duckdb_$q.out") s in engine), $(rss "duckdb_$q"); results $same" \
    "$(ratio "$(secs "sql_$q")" "$(secs "duckdb_$q")")"
done
total=$(for p in $PHASES; do cat "$WORK/$p.time"; done | awk '{ s += $1; if ($2 > m) m = $2 } END { printf "%.2f s | | %.2f GB", s, m / 1048576 }')
echo "| reference build: ingest to export, the phases above | $total (the largest phase) | | |"
lake_mb=$(mb "$LAKE"); duck_mb=$(mb "$WORK/duckdb-mini-coder")
echo "| lake size | $lake_mb MB | | | raw inputs $((albedo_mb + mini_mb)) MB (the lake is $(awk -v a="$lake_mb" -v b="$((albedo_mb + mini_mb))" 'BEGIN { printf "%.2f", a / (b > 0 ? b : 1) }')x its input); DuckDB's mini-coder output $duck_mb MB from $mini_mb MB | |"
echo "| binary | $(mb "$BIN") MB | | | | |"
echo
echo "ratio: peer time over turnlake time (validate: turnlake tokens/s over the peer's); above 1, turnlake is faster."
echo "DuckDB extraction against the lake: $agreement" | sed '2,$s/^/  /'
