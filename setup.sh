#!/usr/bin/env bash
# One idempotent set-up for the README's two commands and CI: installs what
# the build and the tests need beyond cargo's own dependencies, and does
# nothing when it is already there.
#
#   cmake, libclang-dev   Debian packages xgboost-rs-sys needs to build the
#                   bundled XGBoost and generate its bindings (the scorer)
#   s3s-fs 0.14.1   a local S3-compatible server the S3 tests start on
#                   loopback (0.15+ needs a newer rustc than this toolchain)
#   libtorch 2.13.0 the CPU libraries of PyTorch's wheel (tch 0.26 links exactly
#                   this version), into $TOOLS/torch-2.13.0; `.tools/libtorch`
#                   in the clone points at it, and .cargo/config.toml hands it
#                   to the build as LIBTORCH
#   pyarrow         in a Python venv ($TOOLS/py): the verl export test reads
#                   the written Parquet back the way verl's datasets do
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
PYARROW_VERSION=17.0.0
TORCH_VERSION=2.13.0
FEATURES="${TURNLAKE_FEATURES-train,scorer,cluster}"
wants() { [[ ",${FEATURES// /,}," == *",$1,"* || ",${FEATURES// /,}," == *",default,"* ]]; }
DEBIAN_PACKAGES=()
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

if ! "$TOOLS/py/bin/python" -c "import pyarrow, sys; sys.exit(pyarrow.__version__ != '$PYARROW_VERSION')" 2>/dev/null; then
    echo "setup: installing pyarrow $PYARROW_VERSION into $TOOLS/py (once)" >&2
    python3 -m venv "$TOOLS/py"
    "$TOOLS/py/bin/pip" install --quiet --disable-pip-version-check "pyarrow==$PYARROW_VERSION"
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
