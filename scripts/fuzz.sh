#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan + UBSan, PARBENCH_FUZZ=ON) in build-fuzz and runs
# each for a bounded time from its committed corpus. New inputs go to a scratch folder, not into the corpus.
# A crash, a hang (-timeout), a leak or a sanitizer report fails the script and leaves the input in build-fuzz/.
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 20)] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; install Debian's clang (apt-get install clang)" >&2
  exit 2
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DPARBENCH_FUZZ=ON \
  -DPARBENCH_CUDA=OFF -DPARBENCH_MPI=OFF -DPARBENCH_NCCL=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" >/dev/null  # -O1 -g1: the build in about 1.5 minutes on 2 cores
cmake --build build-fuzz --target fuzz -j "$(nproc)"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for dir in tests/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for target in "${targets[@]}"; do
  scratch=$(mktemp -d)
  echo "== $target (${seconds} s)"
  # -timeout: one input running longer than 10 s counts as a hang; -rss_limit_mb bounds memory per input.
  log="build-fuzz/$target.log"
  status=0
  (cd build-fuzz && "./bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 "$scratch" "../tests/fuzz/corpus/$target") >"$log" 2>&1 || status=$?
  grep -E "stat::number_of_executed_units|SUMMARY" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "fuzz.sh: $target failed (exit $status); the input is in build-fuzz/ (crash-*, timeout-*), log $log" >&2
    exit 1
  fi
  rm -rf "$scratch"
done
echo "fuzz.sh: every target ran ${seconds} s without a crash, hang or sanitizer report"
