#!/usr/bin/env bash
# Sets up, builds and runs parbench's main job on whatever this machine has (GPUs when present, cpu otherwise),
# writing results to results/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR=build scripts/build.sh
mkdir -p results
bin=build/bin

echo "== copy bandwidth of the device (the ceiling for collectives)"
$bin/bench_memcpy --device auto --sizes 1K:64M:x4 --csv results/memcpy.csv
