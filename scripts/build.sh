#!/usr/bin/env bash
# Configures and builds parbench into BUILD_DIR (default build/); extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja "$@" >"$build_dir.configure.log" 2>&1 || { cat "$build_dir.configure.log"; exit 1; }
grep -- "-- parbench:" "$build_dir.configure.log" || true
cmake --build "$build_dir" -j "$(nproc)"
