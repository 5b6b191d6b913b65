#!/usr/bin/env bash
# Configures and builds parbench into BUILD_DIR (default build/); extra arguments go to cmake's configure step.
# BUILD_TARGETS (space-separated) builds only those targets and what they need; the default is everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja "$@" >"$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log"; exit 1; }
grep -- "-- parbench:" "$build_dir.configure.log" || true
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
