#!/bin/sh
# Predicted step times against bench_train runs on this machine's cpu device: ddp, zero3, tp, pp (1f1b) and hybrid
# at 1, 2 and 4 ranks (threads). The system file comes from scripts/calibrate.sh at this model's own shapes (the
# microbatches the rows run: 1, 2, 4 and 8 samples; and the linear layers of every row's microbatch and
# tensor-parallel degree, timed as they are), unless one is given. Each rank thread is bound to a core (--pin,
# rank mod cores), and the prediction plays the pipeline with that binding (--simulate --pin: ranks bound to one core
# share that core alone); unbound, the same 2-rank pipeline measured 83-109 ms from one run to the next, bound
# 80-82. Each measured step is the median of three runs. Prints each pair and fails when one differs from the
# measured time by more than the tolerance (default 15%). The first row is measured again at the end: how far the
# machine's own speed moved while the rows ran (a shared VM's did by 20% within minutes), which the calibration made
# at the start cannot know.
#   prediction_vs_cpu_runs.sh BIN_DIR [SYSTEM.json|calibrate] [TOLERANCE]
set -eu
bin=$1 system=${2:-calibrate} tol=${3:-0.15}
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
layers=4 hidden=64 heads=4 seq=32 vocab=128
model="--model gpt --layers $layers --hidden $hidden --heads $heads --seq $seq --vocab $vocab --global-batch 8"
if [ "$system" = calibrate ]; then
  shapes=""
  for b in 1 2 4 8; do shapes="$shapes${shapes:+;}B=$b,T=$seq,C=$hidden,NH=$heads,V=$vocab"; done
  # The linear layers the rows below run, timed as they are: (tokens per microbatch, tensor-parallel degree) pairs,
  # each with qkv, projection, fc, fc projection and logits at that degree's widths.
  linears=""
  for pair in 256:1 128:1 64:1 256:2 256:4 128:2; do
    n=${pair%:*} t=${pair#*:} f=$((4 * hidden))
    for l in "$hidden $((3 * hidden / t))" "$((hidden / t)) $hidden" "$hidden $((f / t))" "$((f / t)) $hidden" \
             "$hidden $((vocab / t))"; do
      set -- $l
      linears="$linears${linears:+,}${n}x$1x$2"
    done
  done
  "$here/scripts/calibrate.sh" --bin "$bin" --out "$dir/system.json" --shapes "$shapes" --linears "$linears" > /dev/null
  system=$dir/system.json
fi
step_ms() { awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "step_ms") c = i } NR == 2 { print $c }' "$1"; }
# measured_ms RANKS "RUN ARGS": the median step of three runs.
measured_ms() {
  for run in 1 2 3; do
    rm -f "$dir/run.csv"
    "$bin/bench_train" $model --device cpu --ranks "$1" --steps 7 --warmup 1 --quiet --pin --csv "$dir/run.csv" $2
    step_ms "$dir/run.csv"
  done | sort -g | sed -n 2p
}
rows=0 outside=0 first="" first_ranks="" first_args=""
compare() {  # compare LABEL RANKS "RUN ARGS" "SIMULATE ARGS"
  rm -f "$dir/sim.csv"
  "$bin/bench_train" $model --simulate --gpus "$2" --system "$system" --pin --quiet --csv "$dir/sim.csv" $4
  measured=$(measured_ms "$2" "$3")
  [ -n "$first" ] || { first=$measured first_ranks=$2 first_args=$3; }
  awk -v label="$1" -v n="$2" -v m="$measured" -v p="$(step_ms "$dir/sim.csv")" -v tol="$tol" 'BEGIN {
    err = (p - m) / m
    printf "%-8s %d ranks: measured %9.2f ms  predicted %9.2f ms  %+6.1f%%%s\n", label, n, m, p, 100 * err,
           (err > tol || err < -tol) ? "  OUTSIDE" : ""
    exit (err > tol || err < -tol) ? 1 : 0 }' || outside=$((outside + 1))
  rows=$((rows + 1))
}
for n in 1 2 4; do
  compare ddp "$n" "--scheme ddp" ""
  compare zero3 "$n" "--scheme zero3" "--zero 3"
  compare tp "$n" "--scheme tp" "--tp $n"
  compare pp-1f1b "$n" "--scheme pp --schedule 1f1b --microbatches 4" "--pp $n --microbatches 4"
done
compare hybrid 4 "--scheme hybrid --tp 2 --pp 2 --microbatches 2" "--tp 2 --pp 2 --microbatches 2"
compare hybrid 2 "--scheme hybrid --dp 2" "--dp 2"
awk -v a="$first" -v b="$(measured_ms "$first_ranks" "$first_args")" 'BEGIN {
  printf "machine drift: the first row measured %.2f ms at the start and %.2f ms at the end (%+.1f%%)\n", a, b, 100 * (b - a) / a }'
echo "$((rows - outside)) of $rows rows within $tol"
[ "$outside" -eq 0 ]
