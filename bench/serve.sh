#!/usr/bin/env bash
# Benchmark (not a test): `turnlake serve` over an existing lake (the
# reference-scale one bench/reference.sh or bench/mix_sweep.sh builds):
# the time of a trajectory page, of the list filtered by structured fields,
# and of free-text search over every command: the first request, and the
# best of two more (the credit and mix pages count their report on the
# first visit only), then the server's peak RSS.
# Usage: bench/serve.sh LAKE
# PROFILE=debug reuses the test build; BIN=path runs that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
LAKE=$1; WORK=$(mktemp -d)
. bench/common.sh
"$BIN" --lake "$LAKE" serve --bind 127.0.0.1:0 > "$WORK/serve.out" &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q http "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$WORK/serve.out"); base=${url%%/?token=*}; token=${url##*token=}
traj=$("$BIN" --lake "$LAKE" sql --format csv \
  "SELECT traj_id FROM trajectories WHERE source = 'albedo' ORDER BY traj_id LIMIT 1 OFFSET 1000" | tail -1)
cmd=$("$BIN" --lake "$LAKE" sql --format csv \
  "SELECT split_part(command, ' ', 2) AS w FROM turns WHERE t = 3 AND command LIKE 'grep -rn %' ORDER BY traj_id LIMIT 1" | tail -1)
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
best() {
  local name=$1 path=$2 t first best=
  for i in 1 2 3; do
    t=$(curl -s -o /dev/null -w '%{time_total}' -b "turnlake_token=$token" "$base$path")
    if [ "$i" = 1 ]; then first=$t; continue; fi
    best=$(awk -v a="$t" -v b="${best:-$t}" 'BEGIN { print (a < b ? a : b) }')
  done
  echo "$name: first ${first}s, then ${best}s"
}
best "trajectory page" "/trajectory?id=$(enc "$traj")"
best "list: albedo, not looped, score 0.5-0.9" "/trajectories?source=albedo&looped=no&score_min=0.5&score_max=0.9"
best "list: mini_coder, in finish_mini" "/trajectories?source=mini_coder&product=finish_mini"
best "list: command text $(printf %q "$cmd")" "/trajectories?q=$(enc "$cmd")"
best "lake page" "/"
best "mix page" "/mix"
best "credit page" "/credit"
echo "server peak RSS: $(awk '/VmHWM/ { print int($2 / 1024) " MiB" }' /proc/$pid/status)"
