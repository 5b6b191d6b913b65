#!/bin/sh
# bench_train --simulate writes each prediction's range (step_ms_low, step_ms_high) beside step_ms: on dgx-a100, whose
# curves carry spreads, low < step < high; on a system file without spreads all three are equal. Usage: $0 BENCH_TRAIN
set -eu
bt=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
column() {  # column NAME FILE: the value of NAME in the file's first row
  awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } NR == 2 { print $c }' "$2"
}
layout="--simulate --gpus 8 --layers 8 --hidden 2048 --heads 16 --seq 2048 --vocab 51200 --dtype bf16 --tp 8 \
  --global-batch 8 --micro-batch 1 --quiet"
$bt $layout --system dgx-a100 --csv "$dir/a.csv"
low=$(column step_ms_low "$dir/a.csv") step=$(column step_ms "$dir/a.csv") high=$(column step_ms_high "$dir/a.csv")
echo "dgx-a100: step_ms $step, range $low - $high"
awk -v l="$low" -v s="$step" -v h="$high" 'BEGIN { exit !(l > 0 && l < s && s < h) }' || { echo "FAIL: not low < step < high"; exit 1; }
cat > "$dir/flat.json" <<'JSON'
{"name": "flat", "gpu": {"name": "g", "matrix_tflops_16": 312, "matrix_tflops_32": 19.5,
 "hbm_gbps": 2039, "hbm_gb": 80, "matrix_efficiency": [[0, 0.8]],
 "hbm_efficiency": [[0, 0.8]]},
 "network": [{"name": "nvlink", "gpus": 8, "gbps": 300, "efficiency": 0.7, "latency_us": 1},
             {"name": "ib", "gpus": 1073741824, "gbps": 25, "efficiency": 0.9, "latency_us": 2}]}
JSON
$bt $layout --system "$dir/flat.json" --csv "$dir/f.csv"
low=$(column step_ms_low "$dir/f.csv") step=$(column step_ms "$dir/f.csv") high=$(column step_ms_high "$dir/f.csv")
echo "flat system: step_ms $step, range $low - $high"
[ "$low" = "$step" ] && [ "$high" = "$step" ] || { echo "FAIL: a system without spreads has a range"; exit 1; }
echo "simulate_range: ok"
