#!/bin/sh
# bench_train --calibrate on a bench_kernels CSV of this machine: the fitted curves are printed, --system-out writes
# a system file that --simulate accepts, and its matrix curve is what the rows imply (the fit error is printed).
#   calibrate_kernels.sh BIN_DIR
set -eu
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin/bench_kernels" --device cpu --shape small --benchmark_filter='matmul_forward|gelu_forward' \
  --benchmark_min_time=0.01 --benchmark_format=csv > "$dir/kernels.csv" 2>/dev/null
"$bin/bench_train" --calibrate "$dir/kernels.csv" --system this-machine --dtype f32 --system-out "$dir/fit.json" \
  > "$dir/out.txt"
cat "$dir/out.txt"
grep -q '^# matrix efficiency by GFLOP (f32 matmul rows against' "$dir/out.txt"
grep -q '^# HBM efficiency by bytes (f32 elementwise rows' "$dir/out.txt"
grep -q '"processing": "roofline"' "$dir/fit.json"
"$bin/bench_train" --simulate --gpus 1 --system "$dir/fit.json" --quiet --csv "$dir/sim.csv"
grep -q 'predicted:this-machine' "$dir/sim.csv"
echo "calibrate_kernels: ok"
