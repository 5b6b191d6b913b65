#!/usr/bin/env bash
# Sets up, builds and runs parbench's main job on whatever this machine has (a GPU when usable, the cpu otherwise):
# the allreduce sweep over rank counts and implementations, bench_train over every data-parallel and
# model-parallel scheme at 4 ranks, a scaling sweep, a pipeline bubble sweep, step timelines, and every figure,
# written to results/ with a summary at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo; echo "== $*"; }
# The named columns of a CSV as an aligned table: by name, since columns move when a CSV gains one.
show() {
  local file=$1
  shift
  awk -F, -v want="$*" 'NR == 1 { n = split(want, w, " "); for (i = 1; i <= NF; i++) col[$i] = i
      for (j = 1; j <= n; j++) if (!(w[j] in col)) { print "demo: no column " w[j] " in " FILENAME > "/dev/stderr"; exit 1 } }
    { line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? "," : "") $col[w[j]]; print line }' "$file" | column -s, -t
}

step "checking for what the demo needs (scripts/setup.sh --for demo)"
# Installs what is missing only as root or with PARBENCH_INSTALL=1; otherwise says what and how, and stops.
scripts/setup.sh --for demo --hint "PARBENCH_INSTALL=1 scripts/demo.sh"
step "building the programs the demo runs into build/ (the whole log goes to build.log)"
# Only the programs (no tests), with a line every 10 s saying how far ninja has come. Without a GPU the demo runs on
# the cpu device, so its build leaves the cuda device out: nvcc's two architectures were most of the build's time.
cuda_args=()
if ! nvidia-smi -L >/dev/null 2>&1; then
  cuda_args=(-DPARBENCH_CUDA=OFF)
  echo "  no GPU here (nvidia-smi lists none): building the cpu and simt devices only"
fi
BUILD_TARGETS="bench_memcpy bench_allreduce bench_train parbench-plot" BUILD_DIR=build scripts/build.sh \
  "${cuda_args[@]}" >build.log 2>&1 &
build_pid=$!
shown=$(date +%s)
while kill -0 "$build_pid" 2>/dev/null; do
  sleep 1
  [ $(( $(date +%s) - shown )) -ge 10 ] || continue
  shown=$(date +%s)
  done_steps=$(grep -o '^\[[0-9]*/[0-9]*\]' build.log | tail -1 | tr -d '[]' || true)
  echo "  ${done_steps:-0/?} build steps done ($((shown - start)) s)"
done
wait "$build_pid" || { grep -E -A5 "error|FAILED" build.log | head -60; echo "demo: the build failed; see build.log"; exit 1; }
bin=build/bin
out=results
rm -rf "$out"
mkdir -p "$out"
device=auto

if $bin/bench_memcpy --device cuda --sizes 1K --quiet 2>/dev/null; then
  device=cuda; impls=nccl,ring,rd,rhd,tree,naive
else
  device=cpu; impls=mpi,mpi-nb,ring,rd,rhd,tree,naive
fi
echo "demo: device $device"

step "copy bandwidth of the device (the ceiling for collectives)"
$bin/bench_memcpy --device $device --sizes 1K:16M:x4 --csv $out/memcpy.csv

step "allreduce: every implementation at 1, 2 and 4 ranks (nccl-tests table of the 4-rank run below)"
scripts/sweep.sh --ranks 1,2 --out $out --name allreduce_small --no-plot bench_allreduce --device $device \
  --impl $impls --sizes 8:4M:x4 -n 10
mpi=(); command -v mpirun >/dev/null && { mpi=(mpirun --oversubscribe -np 4); [ "$(id -u)" -ne 0 ] || mpi+=(--allow-run-as-root); }
if [ ${#mpi[@]} -gt 0 ]; then
  "${mpi[@]}" $bin/bench_allreduce --device $device --impl $impls --sizes 8:4M:x4 -n 10 --csv $out/allreduce4.csv
else
  $bin/bench_allreduce --ranks 4 --device $device --impl ${impls/mpi,mpi-nb,/} --sizes 8:4M:x4 -n 10 --csv $out/allreduce4.csv
fi
{ cat $out/allreduce_small.csv; tail -n +2 $out/allreduce4.csv; } > $out/allreduce.csv
rm $out/allreduce_small.csv $out/allreduce4.csv
build/bin/parbench-plot busbw -i $out/allreduce.csv -o $out/allreduce_busbw.png --ranks 2,4 --machine "$(uname -n), $(nproc) cores"
build/bin/parbench-plot latency -i $out/allreduce.csv -o $out/allreduce_latency.png --ranks 2,4 --machine "$(uname -n), $(nproc) cores"

# The schemes, schedules and --dp-schemes come from the program: "name ranks layers family args" per line.
mapfile -t runnable < <($bin/bench_train --list-runnable | grep -v '^#')
model=(--model gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 --global-batch 16 --steps 4 --warmup 1)
step "bench_train: every data-parallel scheme at 4 ranks (GPT, $(echo "${model[@]}" | cut -d' ' -f3-10))"
for run in "${runnable[@]}"; do
  read -r _ ranks _ family args <<<"$run"
  [ "$family" = data ] || continue
  [ "$ranks" -gt 1 ] && ranks=4  # single runs on one rank
  # shellcheck disable=SC2086
  $bin/bench_train --device $device --ranks $ranks $args "${model[@]}" --check --quiet --csv $out/train_schemes.csv
done
show $out/train_schemes.csv scheme ranks step_ms samples_per_s peak_bytes params_bytes grads_bytes optimizer_bytes \
  activations_bytes comm_buffer_bytes workspace_bytes comm_bytes_per_step max_param_diff_vs_single
build/bin/parbench-plot memory -i $out/train_schemes.csv -o $out/train_memory.png --machine "$(uname -n), $(nproc) cores"

step "bench_train: strong scaling of ddp and zero3 over 1, 2, 4 ranks"
for scheme in ddp zero3; do
  for n in 1 2 4; do
    $bin/bench_train --device $device --ranks $n --scheme $scheme "${model[@]}" --quiet --csv $out/train_scaling.csv
  done
done
build/bin/parbench-plot scaling -i $out/train_scaling.csv -o $out/train_scaling.png --machine "$(uname -n), $(nproc) cores"

step "one ddp step on a timeline (Chrome trace; open it in https://ui.perfetto.dev)"
$bin/bench_train --device $device --ranks 2 --scheme ddp "${model[@]}" --bucket-mb 0.05 --quiet \
  --trace $out/ddp_trace.json
build/bin/parbench-plot timeline -i $out/ddp_trace.json -o $out/ddp_timeline.png --machine "$(uname -n), $(nproc) cores" \
  --title "DDP, 2 ranks: one step, bucket allreduces on the communication thread"

shape=(--model gpt --hidden 64 --heads 4 --seq 32 --vocab 128 --steps 4 --warmup 1)
deep=("${shape[@]}" --layers 4)
# One core per stage (--pin); the bubble is the median over 9 steps, so a step slowed by something else on the
# machine does not decide it. Blocks per stage by --partition balanced (even predicted stage times; with this small
# vocabulary the head is light and that is 2+2, the partition column says).
balanced=(--model gpt --layers 4 --hidden 64 --heads 4 --seq 32 --vocab 32 --steps 9 --warmup 1 --partition balanced)
step "pipeline bubble: gpipe and 1f1b on 2 stages over 1 to 8 microbatches (measured vs (p-1)/(m+p-1))"
for schedule in gpipe 1f1b; do
  for m in 1 2 4 8; do
    [ $schedule = 1f1b ] && [ $m -lt 2 ] && continue
    $bin/bench_train --device $device --ranks 2 --scheme pp --schedule $schedule --microbatches $m \
      --global-batch $((4 * m)) "${balanced[@]}" --pin --quiet --csv $out/train_pipeline.csv
  done
done
show $out/train_pipeline.csv scheme schedule microbatches partition step_ms bubble_measured bubble_theory \
  bubble_replayed activations_bytes
build/bin/parbench-plot bubble -i $out/train_pipeline.csv -o $out/pipeline_bubble.png --machine "$(uname -n), $(nproc) cores"

step "model-parallel schemes at 4 ranks (2-way, data parallel over the rest), each checked against a single-rank run"
# Every schedule and --dp-scheme, and a hybrid grid with a pipeline; 4 layers unless a pipeline needs a multiple.
for run in "${runnable[@]}" "hybrid_tp_pp 4 2 model --scheme hybrid --tp 2 --pp 2 --microbatches 4"; do
  read -r _ _ layers family args <<<"$run"
  [ "$family" = data ] && continue
  # shellcheck disable=SC2086
  $bin/bench_train --device $device --ranks 4 $args --global-batch 16 "${shape[@]}" \
    --layers $(( (4 + layers - 1) / layers * layers )) --check --quiet --csv $out/train_model_parallel.csv
done
show $out/train_model_parallel.csv scheme schedule tp pp dp zero microbatches step_ms bubble_measured bubble_theory \
  peak_bytes activations_bytes comm_bytes_per_step max_param_diff_vs_single

step "one 1f1b step of 4 stages on a timeline"
$bin/bench_train --device $device --ranks 4 --scheme pp --schedule 1f1b --microbatches 8 --global-batch 16 \
  "${deep[@]}" --quiet --trace $out/pp_trace.json
build/bin/parbench-plot timeline -i $out/pp_trace.json -o $out/pp_timeline.png --machine "$(uname -n), $(nproc) cores" \
  --title "1F1B pipeline, 4 stages, 8 microbatches: one step"

step "summary"
# Columns by name: a header line maps each name to its field number.
by_name='NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }'
awk -F, "$by_name"' $col["ranks"] == 4 && $col["inplace"] == 0 {
    if ($col["bytes"] + 0 >= max[$col["impl"]] + 0) { max[$col["impl"]] = $col["bytes"]; bw[$col["impl"]] = $col["busbw_gbps"] } }
  END { printf "allreduce busbw at %s bytes, 4 ranks (GB/s):", max["ring"]; for (i in bw) printf " %s %s", i, bw[i]; print "" }' \
  $out/allreduce.csv
awk -F, "$by_name"' { printf "%-9s %d ranks: %8.2f ms/step, peak %6.2f MiB, comm %6.3f MiB/step, diff vs single %s\n",
  $col["scheme"], $col["ranks"], $col["step_ms"], $col["peak_bytes"] / 1048576, $col["comm_bytes_per_step"] / 1048576,
  ($col["max_param_diff_vs_single"] == "" ? "-" : $col["max_param_diff_vs_single"]) }' $out/train_schemes.csv
awk -F, "$by_name"' { printf "%-6s m=%d: bubble measured %.3f, theory %.3f, replayed from the measured action times %.3f\n",
  $col["schedule"], $col["microbatches"], $col["bubble_measured"], $col["bubble_theory"], $col["bubble_replayed"] }' \
  $out/train_pipeline.csv
echo "figures: $(cd $out && ls *.png | tr '\n' ' ')"
echo "demo: done in $(( $(date +%s) - start )) s; results in $out/"
