#!/bin/sh
# Predicted parameter + gradient + optimizer bytes (--simulate) equal the closed form a run here prints with
# --estimate-memory (the estimate_bytes column), for the same model and layout. Usage: $0 BENCH_TRAIN
set -eu
bt=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
model="--model gpt --layers 4 --hidden 16 --heads 2 --seq 6 --vocab 24 --global-batch 8 --steps 1 --warmup 0 --quiet --device cpu"
column() {  # column NAME FILE: the value of NAME in the file's first row
  awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } NR == 2 { print $c }' "$2"
}
failed=0
check() {  # check LABEL "RUN ARGS" "SIMULATE ARGS"
  rm -f "$dir/run.csv" "$dir/sim.csv"
  $bt $model $2 --estimate-memory --csv "$dir/run.csv" > /dev/null
  $bt $model $3 --simulate --csv "$dir/sim.csv" > /dev/null
  run=$(column estimate_bytes "$dir/run.csv")
  sim=$(column estimate_bytes "$dir/sim.csv")
  if [ "$run" = "$sim" ] && [ -n "$run" ]; then
    echo "$1: estimate_bytes $run (run) = $sim (predicted)"
  else
    echo "$1: MISMATCH estimate_bytes $run (run) vs $sim (predicted)"
    failed=1
  fi
}
check ddp-2 "--scheme ddp --ranks 2" "--gpus 2"
check zero1-4 "--scheme zero1 --ranks 4" "--gpus 4 --zero 1"
check zero2-2 "--scheme zero2 --ranks 2" "--gpus 2 --zero 2"
check zero3-4 "--scheme zero3 --ranks 4 --dtype bf16" "--gpus 4 --zero 3 --dtype bf16"
check tp-2 "--scheme tp --ranks 2" "--gpus 2 --tp 2"
check hybrid-dp2-tp2-zero1 "--scheme hybrid --ranks 4 --dp 2 --tp 2 --dp-scheme zero1" "--gpus 4 --tp 2 --zero 1"
check pp-2 "--scheme pp --ranks 2 --microbatches 4" "--gpus 2 --pp 2 --microbatches 4"
exit $failed
