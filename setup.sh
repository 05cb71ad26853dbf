#!/usr/bin/env bash
# One idempotent set-up for the README's two commands and CI: installs what
# the build and the tests need beyond cargo's own dependencies, and does
# nothing when it is already there.
#
#   s3s-fs 0.14.1   a local S3-compatible server the S3 tests start on
#                   loopback (0.15+ needs a newer rustc than this toolchain)
#
# Tools go to TURNLAKE_TOOLS (default ~/.cache/turnlake-tools); the tests
# find them there.
set -euo pipefail

TOOLS="${TURNLAKE_TOOLS:-$HOME/.cache/turnlake-tools}"
S3S_FS_VERSION=0.14.1

if ! "$TOOLS/bin/s3s-fs" --version 2>/dev/null | grep -qF "$S3S_FS_VERSION"; then
    echo "setup: installing s3s-fs $S3S_FS_VERSION into $TOOLS (once; a few minutes)" >&2
    cargo install "s3s-fs@$S3S_FS_VERSION" --features binary --locked --root "$TOOLS" \
        --target-dir "$TOOLS/target"
    rm -rf "$TOOLS/target"
fi
