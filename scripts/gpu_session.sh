#!/usr/bin/env bash
# The one command for a machine with a GPU: builds for the GPU it finds, runs the tests that use it, bench_kernels
# against cuBLAS (and scripts/sdpa_compare.py against PyTorch's attention where torch is installed), cuBLAS at the
# GEMM shapes of the published H100 tables (bench_kernels --linear, the shapes predict_validate --list-linears
# names; turned into a system file with those measured linears and the tables predicted on it), every
# collective at 1, 2, 4 and 8 rank threads, and bench_train for every runnable scheme with
# --check, each step time-boxed and none stopping the run; writes each program's raw output and summary.md (step,
# exit status, wall seconds, key numbers) to docs/results/gpu/<UTC date>-<gpu>/ and prints the summary last.
#
#   scripts/gpu_session.sh                  # a real GPU: Release build into build-gpu/ for its compute capability
#   scripts/gpu_session.sh --emulated       # the emulated GPU build (build-gpu-emu/), small sizes: CI and no GPU
#
# Options:
#   --emulated         -DPARBENCH_CUDA=EMULATED into build-gpu-emu/ (4 emulated GPUs, PARBENCH_EMU_GPUS); implies --tiny
#   --tiny             tiny shapes, sizes and model: about a minute after the build on two cores
#   --build-dir DIR    build here instead of build-gpu/ or build-gpu-emu/
#   --prebuilt BINDIR  skip the build and run the programs in BINDIR (built elsewhere with the same CUDA major
#                      version; its parent folder is the build whose ctest runs)
#   --out DIR          write the run here instead of docs/results/gpu/<UTC date>-<gpu>/
#   --budget SECONDS   wall-clock budget of the whole run, the build included (default 540: one 10-minute
#                      session with room to copy results; 3600 with --emulated, whose build runs on few cores)
#   --ranks LIST       rank counts of the collectives (default 1,2,4,8, capped at the GPUs present but at least 2,
#                      so that on one GPU two rank threads share it and the hand-written algorithms run)
#   --skip LIST        phases not to run, from build,tests,linears,kernels,collectives,train
#   --tar FILE         also pack the run folder into FILE (.tar.gz), one file to copy off the machine
#
# Each phase gets a share of what is left of the budget (build 50, tests 5, linears 20, kernels 8, collectives 10,
# train 7) and prints its elapsed time; a step that outlives its time is killed (exit status 124) and the steps left
# in a spent phase are listed as skipped. NCCL is looked for beside the CUDA toolkit, then in Python's nvidia-nccl
# package (whose library goes on LD_LIBRARY_PATH). Where the machine lacks the build's packages (GoogleTest, Google
# Benchmark, CLI11, nlohmann-json, Boost), build elsewhere against the same CUDA major version, preferably with
# -DPARBENCH_MPI=OFF, and pass --prebuilt; libraries it still lacks (libbenchmark, say) go in a folder named by
# LD_LIBRARY_PATH, and those not found are named in the summary. Or carry the libraries the build finds in
# .devdeps/ (scripts/gpu_deps.sh, run where apt-get reaches Debian): when that folder exists the build and the
# programs take it (CMAKE_PREFIX_PATH, LD_LIBRARY_PATH), and a real GPU's build leaves parbench-plot out
# (-DPARBENCH_PLOTS=OFF: it needs all of Boost). Exit status: 0 when every step that ran exited 0,
# 1 when one did not or no GPU was found, 2 for bad options.
set -uo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.." || exit 1
root=$PWD
prog=gpu_session.sh
accepted="--emulated, --tiny, --build-dir DIR, --prebuilt BINDIR, --out DIR, --budget SECONDS, --ranks LIST, --skip LIST, --tar FILE, --help"
phases_all="build tests linears kernels collectives train"

usage_error() { echo "$prog: $*" >&2; exit 2; }
help() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0; }

emulated=0 tiny=0 build_dir="" prebuilt="" out="" budget="" ranks_opt="" skip="" tar_file=""
while [ $# -gt 0 ]; do
  opt=$1
  case $opt in
    --emulated) emulated=1; tiny=1 ;;
    --tiny) tiny=1 ;;
    -h|--help) help ;;
    --build-dir|--prebuilt|--out|--budget|--ranks|--skip|--tar)
      if [ $# -lt 2 ] || [ -z "$2" ]; then usage_error "$opt needs a value; accepted: $accepted"; fi
      case $opt in
        --build-dir) build_dir=$2 ;; --prebuilt) prebuilt=$2 ;; --out) out=$2 ;; --budget) budget=$2 ;;
        --ranks) ranks_opt=$2 ;; --skip) skip=$2 ;; --tar) tar_file=$2 ;;
      esac
      shift ;;
    *) usage_error "unknown option '$opt'; accepted: $accepted" ;;
  esac
  shift
done
[ -z "$budget" ] || [[ $budget =~ ^[1-9][0-9]*$ ]] || usage_error "--budget '$budget' is not a whole number of seconds (e.g. 540)"
[ -z "$ranks_opt" ] || [[ $ranks_opt =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  usage_error "--ranks '$ranks_opt' is not a list of rank counts; accepted: N[,N...], e.g. 1,2,4,8"
for p in ${skip//,/ }; do
  [[ " $phases_all " == *" $p "* ]] || usage_error "--skip: unknown phase '$p'; accepted: ${phases_all// /,}"
done
# Paths given are the caller's, relative to where the command was started.
from_caller() { if [[ -z $1 || $1 == /* ]]; then echo "$1"; else echo "$caller_dir/$1"; fi; }
prebuilt=$(from_caller "$prebuilt") out=$(from_caller "$out") build_dir=$(from_caller "$build_dir")
tar_file=$(from_caller "$tar_file")
if [ -n "$prebuilt" ]; then
  [ -x "$prebuilt/bench_train" ] || usage_error "--prebuilt '$prebuilt' holds no bench_train; accepted: a build's bin/ folder"
  prebuilt=$(cd "$prebuilt" && pwd)
  skip="$skip,build"
fi
[ -n "$build_dir" ] || { [ "$emulated" = 1 ] && build_dir=build-gpu-emu || build_dir=build-gpu; }
[[ $build_dir == /* ]] || build_dir=$root/$build_dir
[ -n "$budget" ] || { [ "$emulated" = 1 ] && budget=3600 || budget=540; }
run_start=$EPOCHREALTIME
deadline=$((${run_start%.*} + budget))
skipped() { [[ ",$skip," == *",$1,"* ]]; }

since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
left() { echo $((deadline - ${EPOCHREALTIME%.*})); }

# --- the GPU -------------------------------------------------------------------------------------------------
gpu_name="" gpu_short="" gpu_count=0 cuda_arch=""
# Compute capability as CMake wants it (90 for 9.0): nvidia-smi's query, else the toolkit's own device query.
detect_arch() {
  local cc
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  if ! [[ $cc =~ ^[0-9]+$ ]]; then
    local q
    q=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/__nvcc_device_query
    cc=$([ -x "$q" ] && "$q" 2>/dev/null | tr ', ' '\n' | grep -E '^[0-9]+$' | head -1)
  fi
  [[ $cc =~ ^[0-9]+$ ]] || cc=90
  # A toolkit older than the GPU: the newest architecture it knows (the driver compiles its PTX for the GPU).
  local known best=""
  known=$(nvcc --list-gpu-arch 2>/dev/null | sed -n 's/^compute_\([0-9]*\)$/\1/p')
  if [ -n "$known" ] && ! grep -qx "$cc" <<<"$known"; then
    best=$(awk -v cc="$cc" '$1 <= cc' <<<"$known" | sort -n | tail -1)
    echo "$prog: nvcc does not know sm_$cc; building for sm_${best:-$cc}" >&2
    cc=${best:-$cc}
  fi
  cuda_arch=$cc
}
detect_gpu() {
  if [ "$emulated" = 1 ]; then
    gpu_count=${PARBENCH_EMU_GPUS:-4} gpu_name="parbench emulated GPU" gpu_short=emulated
    return 0
  fi
  gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ "$gpu_count" -lt 1 ]; then
    echo "$prog: no NVIDIA GPU found (nvidia-smi missing or listing none); --emulated runs the emulated GPU build" >&2
    exit 1
  fi
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  # "NVIDIA H100 80GB HBM3" -> h100: the first word after the vendor, lower case.
  gpu_short=$(sed -E 's/^(NVIDIA|Tesla|GeForce|Quadro)[ ]+//I; s/ .*//' <<<"$gpu_name" | tr '[:upper:]' '[:lower:]' | tr -cd 'a-z0-9')
  [ -n "$gpu_short" ] || gpu_short=gpu
  detect_arch
}

# NCCL beside the toolkit (CMake finds it there) or in Python's nvidia-nccl package (named to CMake, and its
# library put on the loader's path for the runs).
nccl_args=()
find_nccl() {
  [ "$emulated" = 0 ] || return 0
  local d site
  for d in /usr/local/cuda /usr; do [ -f "$d/include/nccl.h" ] && ls "$d"/lib*/libnccl.so* >/dev/null 2>&1 && return 0; done
  for site in $(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + sys.path))' 2>/dev/null) \
              /opt/*/.venv/lib/python3*/site-packages; do
    d=$site/nvidia/nccl
    [ -f "$d/include/nccl.h" ] || continue
    local lib="" f
    for f in "$d"/lib/libnccl.so*; do [ -e "$f" ] && lib=$f && break; done
    [ -n "$lib" ] || continue
    nccl_args=("-DNCCL_INCLUDE_DIR=$d/include" "-DNCCL_LIBRARY=$lib")
    export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    return 0
  done
}

# The build's libraries carried in .devdeps/ (scripts/gpu_deps.sh) where the machine's image lacks them.
use_carried_deps() {
  local deps=$root/.devdeps/usr
  [ -d "$deps" ] || return 0
  export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

detect_gpu
find_nccl
use_carried_deps
if [ -z "$out" ]; then
  out=docs/results/gpu/$(date -u +%Y-%m-%d)-$gpu_short
  [ ! -e "$out" ] || out=$out-$(date -u +%H%M%S)
fi
mkdir -p "$out" || { echo "$prog: cannot create the run folder '$out'" >&2; exit 1; }
out=$(cd "$out" && pwd)
steps_file=$out/steps.tsv
: >"$steps_file"
phase_log=()
bin=${prebuilt:-$build_dir/bin}
ctest_dir=$(dirname "$bin")
export PARBENCH_EMU_WAIT_TIMEOUT=${PARBENCH_EMU_WAIT_TIMEOUT:-120}

# --- phases and steps ----------------------------------------------------------------------------------------
declare -A share=([build]=50 [tests]=5 [linears]=20 [kernels]=8 [collectives]=10 [train]=7)
phase="" phase_start="" phase_deadline=0
phase_begin() {  # phase_begin NAME: its share of the time left, over the phases still to run
  phase=$1 phase_start=$EPOCHREALTIME
  local rest=0 p seen=0
  for p in $phases_all; do
    [ "$p" = "$phase" ] && seen=1
    [ "$seen" = 1 ] && ! skipped "$p" && rest=$((rest + share[$p]))
  done
  local mine=$(($(left) * share[$phase] / (rest > 0 ? rest : 1)))
  phase_deadline=$((${EPOCHREALTIME%.*} + mine))
  echo "== $phase (up to ${mine} s; $(left) s of the budget left)"
}
phase_end() {
  local took
  took=$(since "$phase_start")
  phase_log+=("$phase $took")
  echo "== $phase: ${took} s"
}
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$phase" "$1" "$2" "$3" "$4" >>"$steps_file"; }
# step_limit STEPS_LEFT [FACTOR]: the seconds a step may take: FACTOR (3) times its even part of the phase's time
# left (a slow step may borrow from the fast ones), at least 20 s, never past the phase's end.
step_limit() {
  local steps_left=$1 factor=${2:-3} phase_left=$((phase_deadline - ${EPOCHREALTIME%.*}))
  local fair=$((factor * phase_left / steps_left))
  [ "$fair" -ge 20 ] || fair=20
  echo $((fair < phase_left ? fair : phase_left))
}
# run_step NAME LIMIT KEYFN CMD...: the command's output to NAME.txt, its exit status and wall time recorded, and
# KEYFN NAME RC summarising it. LIMIT under 3 s: skipped, the phase's time is spent.
run_step() {
  local name=$1 limit=$2 keyfn=$3
  shift 3
  if [ "$limit" -lt 3 ]; then
    record "$name" skipped - "not run: the $phase phase's time was spent"
    echo "  $name: skipped (time spent)"
    return 0
  fi
  if [ ! -x "$1" ] && ! command -v "$1" >/dev/null; then
    record "$name" 127 0 "not built: $1"
    echo "  $name: rc=127 ($1 not built)"
    return 0
  fi
  local t0=$EPOCHREALTIME rc=0
  rm -f "$out/$name.csv"  # the programs append to a CSV that exists: a reused --out folder starts afresh
  { printf '$'; printf ' %q' "$@"; echo; } >"$out/$name.txt"
  timeout --kill-after=10 "$limit" "$@" >>"$out/$name.txt" 2>&1 || rc=$?
  local secs key
  secs=$(since "$t0")
  key=$("$keyfn" "$name" "$rc" 2>/dev/null | tr '\t\n' '  ' | sed 's/ *$//')
  [ "$rc" != 124 ] || key="timed out after $limit s; $key"
  record "$name" "$rc" "$secs" "$key"
  echo "  $name: rc=$rc ${secs} s  $key"
}

# --- key numbers ---------------------------------------------------------------------------------------------
# Columns are read by name from each CSV's header, since columns move when a CSV gains one.
key_configure() { [ "$2" = 0 ] || grep -m1 -E 'Could (NOT|not) find|CMake Error' "$out/$1.txt"; }
key_build() { grep -m1 -- '-- parbench:' "$out/configure.txt" | sed 's/^-- parbench: //'; }
key_tests() { grep -E 'tests passed|No tests were found' "$out/$1.txt" | tail -1; }
key_kernels() {
  local csv=$out/$1.csv
  [ -s "$csv" ] || { echo "no rows"; return; }
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { split($c["name"], p, "/"); op = p[1]; rows++; if ($c["error_occurred"] != 0) errors++
      if (op !~ /^matmul/) next
      if (!(op in seen)) { seen[op] = 1; order[++n] = op; best[op] = -1 }
      if (p[2] == "cublas") { cublas[op] = $c["flops_per_s"] / 1e12; next }
      if (p[2] == "cublaslt") next  # a baseline too, not one of ours
      if ($c["pct_cublas"] != "" && $c["pct_cublas"] + 0 > best[op]) { best[op] = $c["pct_cublas"] + 0; who[op] = p[2] } }
    END { line = "fastest vs cuBLAS:"
      for (i = 1; i <= n; i++) { op = order[i]; short = op; sub(/^matmul_forward_/, "", short)
        if (best[op] >= 0) line = line sprintf(" %s %s %.0f%% (cuBLAS %.3g TFLOP/s);", short, who[op], best[op], cublas[op]) }
      printf "%s %d rows, %d errors\n", line, rows, errors }' "$csv"
}
key_collective() {
  local csv=$out/$1.csv notrun
  notrun=$(sed -n 's/^# \([a-z-]*\): not run:.*/\1/p' "$out/$1.txt" | sort -u | tr '\n' ' ')
  [ -s "$csv" ] || { echo "no rows${notrun:+; not run: $notrun}"; return; }
  awk -F, -v notrun="$notrun" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { wrong += $c["wrong"]; if ($c["inplace"] != 0) next
      im = $c["impl"]; b = $c["bytes"] + 0
      if (!(im in top)) order[++n] = im
      if (!(im in top) || b >= top[im]) { top[im] = b; bw[im] = $c["busbw_gbps"] } }
    function human(b) { return b >= 2^30 ? b / 2^30 "G" : b >= 2^20 ? b / 2^20 "M" : b >= 2^10 ? b / 2^10 "K" : b }
    END { line = "busbw GB/s at the largest size:"
      for (i = 1; i <= n; i++) line = line sprintf(" %s %.3g (%s)", order[i], bw[order[i]], human(top[order[i]]))
      printf "%s; wrong %d%s\n", line, wrong, notrun == "" ? "" : "; not run: " notrun }' "$csv"
}
key_latency() {
  local csv=$out/$1.csv
  [ -s "$csv" ] || { echo "no rows"; return; }
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { wrong += $c["wrong"]; if ($c["inplace"] != 0) next; line = line sprintf(" %s %s", $c["impl"], $c["time_us"]) }
    END { printf "us per operation at 1 KiB:%s; wrong %d\n", line, wrong }' "$csv"
}
key_train() {
  local csv=$out/$1.csv
  [ -s "$csv" ] || { grep -m1 -iE 'error|refus' "$out/$1.txt" || echo "no rows"; return; }
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { printf "step %s ms, host waits/step %s, overlap %s, --check max diff %s, loss %s\n", $c["step_ms"],
        $c["host_waits_per_step"], $c["overlap"], $c["max_param_diff_vs_single"], $c["loss"] }' "$csv"
}

# --- the phases ----------------------------------------------------------------------------------------------
collectives=$(sed -nE 's/^ *\{Collective::[a-z0-9_]+, *"([a-z0-9_-]+)".*/\1/p' collectives/table/collective_table.cpp)
if [ "$emulated" = 1 ]; then
  # The emulator's own tests (test_cuda_path: streams, events, copies, NCCL's rules) and the programs' data
  # checks through one hand-written and the NCCL path: a fast sample of the gpu label.
  test_targets=(test_cuda_path)
  test_args=(-L gpu -R '^gpu_(cuda_path_seed1|bench_allreduce_threads2|bench_allreduce_nccl_threads2)$')
else
  # A build for a real GPU registers no ctest label gpu: those tests (tests/gpu_emu) are the emulator's own.
  # test_gpu_emu, test_nccl_emu and test_cuda_path link the emulated runtime; the counted ones (gpu_bench_*,
  # gpu_nccl_batch, gpu_steady_*) read the emulator's NVTX tool; the rest set PARBENCH_EMU_* (GPU count, memory,
  # stream delays, strict mode) or expect its messages; the programs' data checks and training --check runs they
  # hold are the collectives and train phases below. On a GPU the unit tests that take the cuda device when one
  # is usable run instead: every op's CUDA kernel against the float64 reference (test_op_table) and the probe.
  test_targets=(test_op_table test_core)
  test_args=(-R '(^|/)OpTable\.|^Device\.')
fi

build_phase() {
  local args=(-DCMAKE_BUILD_TYPE=Release) generator=()
  if [ "$emulated" = 1 ]; then args+=(-DPARBENCH_CUDA=EMULATED)
  else args+=(-DPARBENCH_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cuda_arch" -DPARBENCH_PLOTS=OFF "${nccl_args[@]}"); fi
  command -v ninja >/dev/null && generator=(-G Ninja)
  local targets=(--target bench_kernels bench_train predict_validate) c
  for c in $collectives; do targets+=("bench_$c"); done
  skipped tests || targets+=("${test_targets[@]}")
  run_step configure "$(step_limit 2)" key_configure cmake -S "$root" -B "$build_dir" "${generator[@]}" "${args[@]}"
  run_step build "$(step_limit 1)" key_build cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
}

tests_phase() {
  [ -f "$ctest_dir/CTestTestfile.cmake" ] || { record ctest 127 0 "no ctest in $ctest_dir"; return; }
  run_step ctest "$(step_limit 1)" key_tests ctest --test-dir "$ctest_dir" --output-on-failure --no-tests=error \
    -j "$(nproc)" --timeout 120 "${test_args[@]}"
}

# sdpa_compare.py's table: our attention's %SDPA per shape and op.
key_sdpa() {
  awk -F, 'NR > 1 { printf "%s B%s T%s NH%s hs%s %s%%SDPA; ", $5, $1, $2, $3, $4, $8 == "" ? "-" : $8 }' "$out/$1.csv"
}
kernels_phase() {
  local shape=(--shape gpt2-124M --min-time 0.2) dt n=3
  [ "$tiny" = 0 ] || shape=(--shape tiny --min-time 0.005)
  for dt in f32 bf16; do
    run_step "bench_kernels_$dt" "$(step_limit $n 1)" key_kernels "$bin/bench_kernels" --device cuda --dtype "$dt" \
      "${shape[@]}" --csv "$out/bench_kernels_$dt.csv"
    n=$((n - 1))
  done
  # PyTorch's SDPA beside our attention at the bf16 run's shapes (an optional reference: a real GPU with torch).
  [ "$emulated" = 0 ] || return 0
  if python3 -c 'import torch' 2>/dev/null; then
    run_step sdpa_compare "$(step_limit 1)" key_sdpa python3 "$root/scripts/sdpa_compare.py" \
      --csv "$out/bench_kernels_bf16.csv" --out "$out/sdpa_compare.csv"
  else
    record sdpa_compare skipped - "not run: PyTorch is not installed (scripts/sdpa_compare.py is optional)"
  fi
}

# The published tables' GEMMs on this GPU: every weight matmul the H100 tables' rows run (predict_validate
# --list-linears; --tiny: two small ones), timed with cuBLAS alone (bf16, forward and both gradients, each checked
# at a reduced shape first), and where PyTorch is installed their flash attention as its SDPA runs it
# (--list-attention, scripts/sdpa_compare.py); bench_train --calibrate makes dgx-h100 with these measured linears and
# attention, and predict_validate predicts every table with that file standing in for dgx-h100. On an H200 the times stand in for an H100's: the
# same GH100 compute at the same power, faster HBM, which GEMMs this large barely feel.
key_linears() {
  local csv=$out/$1.csv
  [ -s "$csv" ] || { echo "no rows"; return; }
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { rows++; if ($c["error_occurred"] != 0) errors++; t = $c["flops_per_s"] / 1e12; split($c["name"], p, "/")
      if (!(p[1] in lo) || t < lo[p[1]]) lo[p[1]] = t; if (t > hi[p[1]]) hi[p[1]] = t }
    END { printf "%d rows, %d errors; cuBLAS TFLOP/s", rows, errors
      for (op in lo) printf " %s %.3g-%.3g;", op, lo[op], hi[op]; printf "\n" }' "$csv"
}
key_measured_system() {
  python3 - "$out/$1.json" <<'PY' 2>/dev/null || echo "no system file"
import json, sys
g = json.load(open(sys.argv[1]))["gpu"]
print(f"{len(g.get('linears', []))} measured linears, {len(g.get('attention', []))} measured attention shapes")
PY
}
# Each H100 table's mean error on the built-in dgx-h100 -> on the measured linears.
key_validate() {
  local means='/: mean \|error\| / && !/held out/ && /h100|nvidia/ { sub(/:$/, "", $1); sub(/,$/, "", $4); print $1, $4 }'
  awk "$means" <("$bin/predict_validate" "$root"/predict/published/*.csv 2>/dev/null) >"$out/$1.builtin"
  awk "$means" "$out/$1.txt" | awk 'NR == FNR { was[$1] = $2; next } { printf "%s %s -> %s; ", $1, was[$1], $2 }' \
    "$out/$1.builtin" -
  rm -f "$out/$1.builtin"
}
linears_phase() {
  local shapes=64x32x96,48x80x16 min_time=0.005
  if [ "$tiny" = 0 ]; then
    shapes=$("$bin/predict_validate" "$root"/predict/published/*.csv --list-linears dgx-h100,h200 2>"$out/linear_shapes.txt") ||
      { record linear_shapes 1 0 "predict_validate --list-linears failed (linear_shapes.txt)"; return; }
    min_time=0.05
  fi
  echo "$shapes" >>"$out/linear_shapes.txt"
  run_step linears_bf16 "$(step_limit 4 3)" key_linears "$bin/bench_kernels" --device cuda --dtype bf16 \
    --linear "$shapes" --benchmark_filter=/cublas/ --min-time "$min_time" --csv "$out/linears_bf16.csv"
  # A step stopped by its time limit leaves the rows it completed: the shapes whose three parts all completed
  # without an error make the system file (linears_complete.csv).
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; header = $0; next }
    $c["error_occurred"] == 0 { n = split($c["name"], p, "/"); rows[p[n]] = rows[p[n]] $0 "\n"; parts[p[n]]++ }
    END { print header; for (s in parts) if (parts[s] == 3) printf "%s", rows[s] }' \
    "$out/linears_bf16.csv" >"$out/linears_complete.csv" 2>/dev/null
  # The tables' flash attention as PyTorch's SDPA runs it (causal, bf16), where PyTorch is installed.
  local measured=$out/linears_complete.csv extra=() a
  if [ "$emulated" = 1 ]; then
    :  # the emulated GPU has no PyTorch
  elif ! python3 -c 'import torch' 2>/dev/null; then
    record sdpa_tables skipped - "not run: PyTorch is not installed (the tables' attention stays on the GEMM curves)"
  else
    for a in $("$bin/predict_validate" "$root"/predict/published/*.csv --list-attention dgx-h100,h200); do
      extra+=(--extra-shape "$a")
    done
    run_step sdpa_tables "$(step_limit 3 2)" key_sdpa python3 "$root/scripts/sdpa_compare.py" \
      --csv "$out/linears_bf16.csv" "${extra[@]}" --out "$out/sdpa_tables.csv"
    [ ! -s "$out/sdpa_tables.csv" ] || measured=$measured,$out/sdpa_tables.csv
  fi
  run_step dgx-h100-measured "$(step_limit 2)" key_measured_system "$bin/bench_train" \
    --calibrate "$measured" --system dgx-h100 --dtype bf16 --system-out "$out/dgx-h100-measured.json"
  run_step validate_measured "$(step_limit 1)" key_validate "$bin/predict_validate" \
    "$root"/predict/published/*.csv --system dgx-h100="$out/dgx-h100-measured.json"
}

rank_counts() {
  local cap=$((gpu_count > 2 ? gpu_count : 2)) r list=${ranks_opt:-1,2,4,8}
  [ -n "$ranks_opt" ] || [ "$tiny" = 0 ] || list=1,2,4
  for r in ${list//,/ }; do [ -n "$ranks_opt" ] || [ "$r" -le "$cap" ] && echo "$r"; done
}
# Host-driven implementations beside their device-side twins (one kernel per operation over symmetric memory);
# those that do not implement a collective say so in a row and the step goes on.
impls_all=nccl,naive,naive-dev,tree,tree-dev,ring,ring-dev,rd,rd-dev,rhd,rhd-dev,oneshot,oneshot-dev,twoshot-dev
collectives_phase() {
  local sizes=(--sizes 1K:64M:x16 -n 10 -w 2) latency=(--sizes 1K -n 1000 -w 100) ranks c r n
  [ "$tiny" = 0 ] || { sizes=(--sizes "1K,64K" -n 2 -w 1); latency=(--sizes 1K -n 5 -w 1); }
  ranks=$(rank_counts)
  n=$(($(wc -w <<<"$collectives") * $(wc -w <<<"$ranks") + 2 * $(wc -w <<<"$ranks")))
  # Small-message latency first (the device-side goal: one-shot at 1 KiB in at most 10 us), then under -G 10.
  for r in $ranks; do
    run_step "allreduce_latency_r$r" "$(step_limit $n)" key_latency "$bin/bench_allreduce" --device cuda \
      --ranks "$r" --impl "$impls_all" "${latency[@]}" --timeout 60 --csv "$out/allreduce_latency_r$r.csv"
    n=$((n - 1))
    run_step "allreduce_latency_graph_r$r" "$(step_limit $n)" key_latency "$bin/bench_allreduce" --device cuda \
      --ranks "$r" --impl nccl,naive-dev,tree-dev,ring-dev,rd-dev,rhd-dev,oneshot-dev,twoshot-dev "${latency[@]}" \
      -G 10 --timeout 60 --csv "$out/allreduce_latency_graph_r$r.csv"
    n=$((n - 1))
  done
  nccl_device_steps
  for c in $collectives; do
    for r in $ranks; do
      run_step "${c}_r$r" "$(step_limit $n)" key_collective "$bin/bench_$c" --device cuda --ranks "$r" \
        --impl "$impls_all" "${sizes[@]}" --timeout 60 --csv "$out/${c}_r$r.csv"
      n=$((n - 1))
    done
  done
}

# nccl-tests' -R 1 and -D 1|2 -R 2 on allreduce (registered buffers; our kernels on NCCL's device API) with the
# data check, where the build's NCCL has that API: rank threads in one process (2, or 1 on a single GPU), and
# mpirun -np 2 where mpirun exists and there are 2 GPUs. Recorded as skipped where the API is missing.
nccl_device_steps() {
  local r=$((gpu_count >= 2 ? 2 : 1)) sizes=(--sizes 1K:64M:x16 -n 10 -w 2) name
  [ "$tiny" = 0 ] || sizes=(--sizes "1K,64K" -n 2 -w 1)
  # The emulated NCCL has no device API (ctest test_bench_bad_input checks the refusals there).
  [ "$emulated" = 0 ] || return 0
  if [ -z "$prebuilt" ] && ! grep -q 'with device API' "$out/configure.txt" 2>/dev/null; then
    record nccl_device skipped - "not run: the build's NCCL has no device API (2.28+, nccl_device.h; configure.txt)"
    return
  fi
  local -a variants=("R1:-R 1" "D1R2:-D 1 -R 2")
  # Multimem needs NVLink SHARP between GPUs: on one GPU recorded as not run.
  if [ "$gpu_count" -ge 2 ]; then variants+=("D2R2:-D 2 -R 2")
  else record allreduce_nccl_D2R2 skipped - "not run: multimem (NVLink SHARP) needs 2 GPUs"; fi
  for v in "${variants[@]}"; do
    name="allreduce_nccl_${v%%:*}_r$r"
    # shellcheck disable=SC2086  # the variant's option words
    run_step "$name" "$(step_limit 4)" key_collective "$bin/bench_allreduce" --device cuda --ranks "$r" --impl nccl \
      ${v#*:} "${sizes[@]}" -c 1 --timeout 60 --csv "$out/$name.csv"
  done
  if command -v mpirun >/dev/null && [ "$gpu_count" -ge 2 ]; then
    run_step allreduce_nccl_D1R2_np2 "$(step_limit 1)" key_collective env OMPI_ALLOW_RUN_AS_ROOT=1 \
      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 "$bin/bench_allreduce" --device cuda --impl nccl -D 1 -R 2 \
      "${sizes[@]}" -c 1 --timeout 60 --csv "$out/allreduce_nccl_D1R2_np2.csv"
  else
    record allreduce_nccl_D1R2_np2 skipped - "not run: needs mpirun and 2 GPUs"
  fi
}

# Every scheme x schedule x --dp-scheme that bench_train --list-runnable prints, at its fewest ranks, batches as
# tests/gpu_emu/runnable_tests.cmake sizes them: data-parallel and tensor-parallel schemes accumulate microbatches
# of 2, pipelines run 4 microbatches, mp passes the whole batch. The Llama-style model (RMSNorm, rotary, SwiGLU,
# two query heads per kv head) repeats the combinations in llama_rows as train_llama_<name>.
llama_rows=" single zero3 tp sp pp_1f1b hybrid_zero3 "
train_phase() {
  local gpt=(--model gpt --hidden 64 --heads 4 --seq 32 --vocab 128) batch=8 steps=(--steps 5 --warmup 3)
  local llama=(--model llama --hidden 64 --heads 4 --kv-heads 2 --seq 32 --vocab 128)
  if [ "$tiny" = 1 ]; then
    gpt=(--model gpt --hidden 16 --heads 2 --seq 8 --vocab 32) batch=4 steps=(--steps 2 --warmup 0)
    llama=(--model llama --hidden 16 --heads 4 --kv-heads 2 --seq 8 --vocab 32)
  fi
  [ -x "$bin/bench_train" ] || { record train 127 0 "not built: $bin/bench_train"; return; }
  local list
  list=$("$bin/bench_train" --list-runnable 2>"$out/train_list.txt") ||
    { record train_list 1 0 "bench_train --list-runnable failed (train_list.txt)"; return; }
  local n name ranks need family args layers micro model step model_args
  n=$(($(grep -vc '^#' <<<"$list") + $(wc -w <<<"$llama_rows")))
  while read -r name ranks need family args; do
    if [ -z "$name" ] || [ "${name:0:1}" = "#" ]; then continue; fi
    layers=$(((2 + need - 1) / need * need))
    micro=2
    [ "$family" != whole ] || micro=$batch
    [[ " $args " != *" --microbatches "* ]] || micro=$((batch / 4))
    for model in gpt llama; do
      step=train_$name model_args=("${gpt[@]}")
      if [ "$model" = llama ]; then
        [[ "$llama_rows" == *" $name "* ]] || continue
        step=train_llama_$name model_args=("${llama[@]}")
      fi
      # shellcheck disable=SC2086  # args is the listed option words
      run_step "$step" "$(step_limit "$n")" key_train "$bin/bench_train" --device cuda "${model_args[@]}" $args \
        --ranks "$ranks" --layers "$layers" --global-batch "$batch" --micro-batch "$micro" "${steps[@]}" --check \
        --optimizer sgd --lr 0.1 --check-tolerance 1e-4 --timeout 60 --csv "$out/$step.csv"
      n=$((n - 1))
    done
  done <<<"$list"
}

# --- the run -------------------------------------------------------------------------------------------------
{
  echo "gpu: $gpu_name x $gpu_count${cuda_arch:+, sm_$cuda_arch}"
  [ "$emulated" = 1 ] || nvidia-smi 2>&1
  command -v nvcc >/dev/null && nvcc --version 2>&1 | tail -2
  [ -z "$prebuilt" ] || { echo "prebuilt: $prebuilt"; ldd "$bin/bench_train" 2>&1 | grep -E 'not found|nccl|cuda|cublas'; }
} >"$out/gpu.txt" 2>&1
# Programs built elsewhere may need libraries this machine lacks (MPI, say): named at the top of the summary.
missing_libs=$(sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' "$out/gpu.txt" | sort -u | tr '\n' ' ')
echo "$prog: $gpu_name x $gpu_count${cuda_arch:+ (sm_$cuda_arch)}, budget $budget s, writing $out"
for p in $phases_all; do
  if skipped "$p"; then phase_log+=("$p skipped"); continue; fi
  if [ "$(left)" -lt 5 ]; then
    phase=$p; record "$p" skipped - "not run: the budget of $budget s was spent"; phase_log+=("$p skipped (budget spent)")
    echo "== $p: skipped, the budget is spent"; continue
  fi
  phase_begin "$p"
  "${p}_phase"
  phase_end
done

# --- summary -------------------------------------------------------------------------------------------------
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# GPU session $(date -u +%Y-%m-%dT%H:%MZ): $gpu_name x $gpu_count${cuda_arch:+, sm_$cuda_arch}"
  echo
  echo "Commit $commit; \`scripts/gpu_session.sh\`$([ "$emulated" = 1 ] && echo " --emulated")$([ "$tiny" = 1 ] && echo " --tiny");" \
       "budget $budget s, $(since "$run_start") s taken. Each step's output is \`<step>.txt\` (CSV \`<step>.csv\`)."
  echo
  printf 'Phases (wall s):'; printf ' %s;' "${phase_log[@]}"; echo
  [ -z "$missing_libs" ] || { echo; echo "bench_train needs libraries not found here: $missing_libs"; }
  echo
  echo "| step | rc | wall s | key numbers |"
  echo "|---|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $2, $3, $4, $5 }' "$steps_file"
} >"$out/summary.md"
failed=$(awk -F'\t' '$3 != "0" && $3 != "skipped"' "$steps_file" | wc -l)
if [ -n "$tar_file" ]; then
  tar -czf "$tar_file" -C "$(dirname "$out")" "$(basename "$out")" || echo "$prog: could not write $tar_file" >&2
fi
echo
cat "$out/summary.md"
[ "$failed" -eq 0 ]
