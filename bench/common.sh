# Sourced by the bench scripts: the binary to measure (BIN=path, or built
# with PROFILE=release|debug into the persistent target dir), a fresh WORK
# folder, and `phase NAME CMD...`, which runs CMD with its output in
# WORK/NAME.out and prints its wall time and peak RSS.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/turnlake-target}"
PROFILE=${PROFILE:-release}
if [ -z "${BIN:-}" ]; then
  if [ "$PROFILE" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
  BIN="$CARGO_TARGET_DIR/$PROFILE/turnlake"
fi
mkdir -p "$WORK"; rm -rf "$WORK/corpus" "$WORK/lake"
phase() {
  local name=$1; shift
  local log="$WORK/$name.time"
  /usr/bin/time -f "%e %M" -o "$log" "$@" > "$WORK/$name.out"
  read -r secs kb < "$log"
  echo "$name: ${secs}s wall, peak RSS $((kb / 1024)) MiB"
  if [ -n "${PHASE_TAIL:-}" ]; then tail -n "$PHASE_TAIL" "$WORK/$name.out" | sed 's/^/    /'; fi
}
