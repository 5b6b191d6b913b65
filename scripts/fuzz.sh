#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan + UBSan, PARBENCH_FUZZ=ON) in build-fuzz and runs
# each from its committed corpus (tests/fuzz/corpus/<target>/). Two modes:
#   scripts/fuzz.sh --ci [TARGET ...]
#       reproducible (scripts/test.sh runs it): a fixed -seed and a fixed -runs count per target (kRuns below,
#       about 3 s each on one core), no corpus reloading, no address randomisation and a fixed pid (see norandom),
#       so two runs on the same corpus execute the same inputs and end with the same coverage; without TARGETs,
#       the targets of kRuns.
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 20)] [TARGET ...]
#       exploratory: each target for a bounded time, a seed of libFuzzer's choosing (not reproducible).
#   scripts/fuzz.sh --build-only [TARGET ...]
#       builds what --ci would run and stops (scripts/test.sh builds them while other stages run).
# New inputs go to a scratch folder, never into the corpus. A crash, a hang (-timeout), a leak or a sanitizer
# report fails the script and leaves the input in build-fuzz/ (crash-*, timeout-*, leak-*) with the log.
set -euo pipefail
cd "$(dirname "$0")/.."

# --ci: the targets CI runs, with their runs (each about 3 s here on one core; from stat::average_exec_per_sec), and
# the seed.
declare -A kRuns=([fuzz_sizes]=100000 [fuzz_csv_rows]=8000 [fuzz_plot_csv]=120 [fuzz_trace]=6000
                  [fuzz_schedule_file]=300 [fuzz_system_file]=8000 [fuzz_calibrate_csv]=400
                  [fuzz_collective_cli]=1200 [fuzz_memcpy_cli]=10000 [fuzz_kernels_cli]=8000 [fuzz_train_cli]=2000
                  [fuzz_plot_cli]=3000 [fuzz_harness_overhead_cli]=15000 [fuzz_store_protocol]=400000)
kSeed=1

ci=0
build_only=0
seconds=20
if [ "${1:-}" = "--ci" ] || [ "${1:-}" = "--build-only" ]; then
  ci=1
  [ "$1" = "--ci" ] || build_only=1
  shift
elif [ $# -gt 0 ]; then
  seconds=$1
  shift
fi
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; install Debian's clang and libclang-rt-14-dev (scripts/setup.sh does)" >&2
  exit 2
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DPARBENCH_FUZZ=ON \
  -DPARBENCH_CUDA=OFF -DPARBENCH_MPI=OFF -DPARBENCH_NCCL=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" >/dev/null  # -O1 -g1: a short build
targets=("$@")
if [ ${#targets[@]} -eq 0 ] && [ "$ci" -eq 1 ]; then
  targets=($(printf '%s\n' "${!kRuns[@]}" | sort))
elif [ ${#targets[@]} -eq 0 ]; then
  for dir in tests/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi
cmake --build build-fuzz --target "${targets[@]}" -j "$(nproc)"
[ "$build_only" -eq 0 ] || exit 0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# --ci runs each target without address-space randomisation and, where the system allows it, as pid 1 of a new
# pid namespace: the compare tracing feeds the values compared (pointers among them) to the mutator, and the pid
# goes into file names (app/output.cpp's directory probe), so either would make two runs explore differently.
norandom=()
if [ "$ci" -eq 1 ]; then
  fixed=0
  if setarch "$(uname -m)" -R true 2>/dev/null; then norandom=(setarch "$(uname -m)" -R) fixed=$((fixed + 1)); fi
  if unshare --pid --fork true 2>/dev/null; then norandom=(unshare --pid --fork "${norandom[@]}") fixed=$((fixed + 1)); fi
  [ "$fixed" -eq 2 ] || echo "fuzz.sh: no setarch -R or no pid namespace here; two runs may explore a little differently" >&2
fi
# One target's run; its report goes to build-fuzz/TARGET.report, its whole log to build-fuzz/TARGET.log.
run_target() {
  local target=$1 limit reload
  if [ "$ci" -eq 1 ]; then
    limit=(-seed="$kSeed" -runs="${kRuns[$target]}")
    # -reload=0: no re-reading of the corpus folders every second, whose allocations (timed by the clock) move
    # later heap addresses.
    reload=(-reload=0)
    echo "== $target (seed $kSeed, ${kRuns[$target]} runs)"
  else
    limit=(-max_total_time="$seconds")
    reload=()
    echo "== $target (${seconds} s)"
  fi
  local scratch log="build-fuzz/$target.log" status=0 start=$SECONDS
  scratch=$(mktemp -d)
  # -timeout: one input running longer than 10 s counts as a hang; -rss_limit_mb bounds memory per input. The
  # scratch folder comes first: libFuzzer writes the inputs it finds there.
  (cd build-fuzz && "${norandom[@]}" "./bin/$target" "${limit[@]}" "${reload[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
     "$scratch" "../tests/fuzz/corpus/$target") >"$log" 2>&1 || status=$?
  grep -E "DONE|stat::number_of_executed_units|stat::new_units_added|SUMMARY" "$log" || true
  echo "   $((SECONDS - start)) s"
  rm -rf "$scratch"
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "fuzz.sh: $target failed (exit $status); the input is in build-fuzz/ (crash-*, timeout-*), log $log"
  fi
  return "$status"
}
if [ "$ci" -eq 1 ]; then
  for target in "${targets[@]}"; do
    if [ -z "${kRuns[$target]:-}" ]; then
      echo "fuzz.sh: no run count for $target; add it to kRuns in scripts/fuzz.sh" >&2
      exit 2
    fi
  done
fi
# Each target runs on one core: as many at once as there are cores. Their reports print in the targets' order.
declare -A pid_of
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$(nproc)" ]; then wait -n || true; running=$((running - 1)); fi
  run_target "$target" >"build-fuzz/$target.report" 2>&1 &
  pid_of[$target]=$!
  running=$((running + 1))
done
failed=()
for target in "${targets[@]}"; do
  wait "${pid_of[$target]}" || failed+=("$target")
  cat "build-fuzz/$target.report"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${failed[*]} failed (see above)" >&2
  exit 1
fi
if [ "$ci" -eq 1 ]; then
  echo "fuzz.sh: every target ran its fixed runs (seed $kSeed) without a crash, hang or sanitizer report"
else
  echo "fuzz.sh: every target ran ${seconds} s without a crash, hang or sanitizer report"
fi
