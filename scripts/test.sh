#!/usr/bin/env bash
# Sets up, checks the structure (scripts/check_structure.sh), builds and runs the tests that are not unit tests
# (ctest), runs the docs' command blocks (tests/docs/run_doc_commands.py), checks docs/dev/extending.md's rows, then runs the unit tests and the cuda path (ctest label gpu)
# in an AddressSanitizer + UndefinedBehaviorSanitizer build on emulated GPUs (PARBENCH_CUDA=EMULATED), where ASan
# also sees kernels that overrun device buffers; then the threaded parts under ThreadSanitizer; last every fuzzer
# in its reproducible mode (scripts/fuzz.sh --ci: a fixed seed and run count per target, from the committed
# corpus), so a run in CI executes the same inputs as the same run on a laptop. Ends with one line per stage and
# its wall-clock time, also when a stage fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# ctest runs one test more than there are cores: many tests spend seconds waiting (mpirun's start, a fault's
# timeout), and the extra one keeps the cores busy meanwhile (on 2 cores the default build's tests took 73 s
# instead of 94).
test_jobs=$((jobs + 1))

stage_names=()
stage_seconds=()
stage_cpu=()
stage_name=""
stage_start=$SECONDS
# CPU seconds of this script's finished children so far (/proc: cutime + cstime, in clock ticks). A stage's share is
# what its children used, and a background part's counts where it is waited for.
children_cpu() {
  local f
  read -r -a f </proc/$$/stat
  echo $(((f[15] + f[16]) / $(getconf CLK_TCK)))
}
stage_cpu_start=$(children_cpu)
stage() {  # ends the running stage (if any) and starts the one named
  if [ -n "$stage_name" ]; then
    stage_names+=("$stage_name")
    stage_seconds+=($((SECONDS - stage_start)))
    stage_cpu+=($(($(children_cpu) - stage_cpu_start)))
  fi
  stage_name=$1
  stage_start=$SECONDS
  stage_cpu_start=$(children_cpu)
  [ -z "$stage_name" ] || echo "== $stage_name"
}
cuda12_pid="" ctest_pid="" docs_pid="" later_pid="" asan_gpu_pid=""
summary() {
  local status=$?
  local pid
  for pid in $cuda12_pid $ctest_pid $docs_pid $later_pid $asan_gpu_pid; do kill "$pid" 2>/dev/null || true; done  # a stage failed while they ran
  [ -z "$stage_name" ] || { [ "$status" -eq 0 ] || stage_name="$stage_name (FAILED)"; stage ""; }
  echo "== stage times (wall clock; CPU time of the stage's finished processes)"
  local i
  for i in "${!stage_names[@]}"; do
    printf '%-44s %3d:%02d  cpu %3d:%02d\n' "${stage_names[$i]}" $((stage_seconds[i] / 60)) $((stage_seconds[i] % 60)) \
      $((stage_cpu[i] / 60)) $((stage_cpu[i] % 60))
  done
  local total_cpu
  total_cpu=$(children_cpu)
  printf '%-44s %3d:%02d  cpu %3d:%02d\n' "total" $((SECONDS / 60)) $((SECONDS % 60)) $((total_cpu / 60)) \
    $((total_cpu % 60))
}
trap summary EXIT

stage "setup"
# Checks what is present; installs what is missing only where it may (root, or PARBENCH_INSTALL=1).
scripts/setup.sh --for test --hint "PARBENCH_INSTALL=1 scripts/test.sh"

stage "structure checks"
# No folder cycles, no include of a library not linked, the code-size limits, no dates in user pages
# (docs/dev/testing.md): a few seconds of configuring and reading, before anything is built.
scripts/check_structure.sh

stage "build (default)"
# -g1 (line tables: stack traces keep files and lines) instead of -g: a quarter less compile time. Device code for
# sm_90 only, which the SASS checks read: the CUDA 12 check below compiles every .cu for both default architectures
# (sm_80 and sm_90), so a kernel that assembles for one only (multimem is sm_90's) still fails here, not on a
# user's first build; compiling both here too cost about a minute.
# -O1 instead of -O2: this build's programs only run functional tests (nothing here measures speed), and its C++
# compiles about a quarter faster (plots/cli.cpp 6.9 s -> 5.0 s). Its own folder, build-test/: build/ stays the
# programs' folder (demo.sh, README), built for speed. No unit-test executables (PARBENCH_UNIT_TESTS=OFF): the unit
# tests run once, in the sanitizer build below, and compiling them here too cost a minute.
BUILD_DIR=build-test scripts/build.sh "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DPARBENCH_UNIT_TESTS=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90
# Every .cu compiled by a CUDA 12 nvcc (Debian's 12.4, headers from PyPI, cached outside the tree) for sm_80 and
# sm_90, objects only (the default build above compiled them with CUDA 13): beside the next stage, whose parts
# spend much of their time waiting; its own stage below waits for it.
scripts/check_cuda12.sh >build-cuda12.log 2>&1 &
cuda12_pid=$!
stage "ctest (default build), docs and extension check (side by side)"
# Three parts that mostly wait (mpirun's start, the faults' and launchers' timeouts) beside one that compiles:
# - ctest: the tests that are not unit tests (programs under mpirun, launchers, scripts, the ptxas and SASS checks
#   of the device code nvcc built); the unit tests run once, in the sanitizer build below, where ASan and UBSan
#   watch them. predict_vs_cpu_runs (quiet_machine) needs idle cores.
# - the docs: each runnable block runs on this build's cpu device with small sizes; GPU and cluster commands are
#   only parsed.
# - the extension check, which compiles: docs/dev/extending.md's rows done for real in a scratch copy, the files
#   touched are the rows' and each dummy entry shows up in help texts, generated test lists and runs.
(cd build-test && ctest --output-on-failure -j "$test_jobs" -LE 'quiet_machine|unit') >build-test-ctest.log 2>&1 &
ctest_pid=$!
python3 tests/docs/run_doc_commands.py --bin build-test/bin >build-docs.log 2>&1 &
docs_pid=$!
extension_status=0
scripts/check_extensions.sh build-extensions || extension_status=$?
ctest_status=0 docs_status=0
wait "$ctest_pid" || ctest_status=$?
wait "$docs_pid" || docs_status=$?
ctest_pid="" docs_pid=""
if [ "$ctest_status" -eq 0 ]; then tail -n 12 build-test-ctest.log; else cat build-test-ctest.log; fi
# The cluster label (tests/cluster: launchers and faults across emulated nodes): how many ran, and why any did not.
cluster_passed=$(grep -cE 'Test +#[0-9]+: cluster_[^ ]+ \.+ +Passed' build-test-ctest.log || true)
cluster_skipped=$(grep -E 'Test +#[0-9]+: cluster_[^ ]+ \.+\*+Skipped' build-test-ctest.log |
  sed -E 's/.*: (cluster_[^ ]+) .*/\1/' | tr '\n' ' ' || true)
echo "cluster tests: $cluster_passed passed${cluster_skipped:+, skipped: ${cluster_skipped% }}"
[ -z "$cluster_skipped" ] || grep -hE "^(fake_cluster: cannot|torchrun not found|mpirun not found|'[a-z]+' not found)" \
  build-test/Testing/Temporary/LastTest.log | sort -u | sed 's/^/  /' || true
cat build-docs.log
[ "$ctest_status" -eq 0 ] || { echo "test.sh: ctest of the default build failed (above the docs' output)"; exit 1; }
[ "$extension_status" -eq 0 ] || { echo "test.sh: the extension check failed (above the ctest and docs output)"; exit 1; }
[ "$docs_status" -eq 0 ] || exit "$docs_status"

stage "CUDA 12 compile check (started beside the stages above)"
cuda12_status=0
wait "$cuda12_pid" || cuda12_status=$?
cuda12_pid=""
if [ "$cuda12_status" -ne 0 ]; then cat build-cuda12.log; exit "$cuda12_status"; fi
grep '^check_cuda12:' build-cuda12.log

stage "build (sanitizers)"
# -O1: the emulated GPU runs every kernel on the CPU under ASan; unoptimised, the gpu label alone took 9 minutes.
# clang: the default build above is g++'s, so both compilers see the whole tree; and clang compiles under the
# sanitizers in about 40% less time than g++ (a unity file of parallel/: 9.3 s against 15.0 s).
BUILD_DIR=build-asan scripts/build.sh -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DPARBENCH_SANITIZE=ON \
  -DPARBENCH_CUDA=EMULATED -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1"
# The ThreadSanitizer and fuzz builds, at the lowest priority, beside the sanitizer stages' tests: those wait
# much of the time (mpirun's start, the faults' timeouts) and the builds take only the cores they leave idle.
nice -n 19 scripts/build_later_trees.sh "$jobs" >build-later.log 2>&1 &
later_pid=$!
stage "ctest (sanitizers: unit tests, and beside them the mpirun unit tests and the gpu label)"
# Two runs side by side, so that the mpirun tests' and the emulated GPUs' waits overlap the unit tests' work:
# - the unit tests, checking leaks too;
# - the unit tests that start mpirun (names with Mpi), whose OpenMPI allocations outlive MPI_Finalize (memory
#   errors checked, not leaks), and the cuda path on emulated GPUs (label gpu, names starting gpu_: the programs
#   under one stream-timing seed here, two in the other builds, the emulator's own tests under three).
export UBSAN_OPTIONS=print_stacktrace=1
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j 2 -L 'unit|gpu' -R 'Mpi|^gpu_') \
  >build-asan-gpu.log 2>&1 &
asan_gpu_pid=$!
asan_unit_status=0 asan_gpu_status=0
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j 2 -L unit -E 'Mpi|^gpu_') \
  >build-asan-unit.log 2>&1 || asan_unit_status=$?
wait "$asan_gpu_pid" || asan_gpu_status=$?
for part in unit:$asan_unit_status gpu:$asan_gpu_status; do
  if [ "${part#*:}" -eq 0 ]; then tail -n 8 "build-asan-${part%%:*}.log"; else cat "build-asan-${part%%:*}.log"; fi
done
[ "$asan_unit_status" -eq 0 ] && [ "$asan_gpu_status" -eq 0 ] || exit 1

stage "build (ThreadSanitizer and fuzz; started beside the stages above)"
later_status=0
wait "$later_pid" || later_status=$?
later_pid=""
if [ "$later_status" -ne 0 ]; then tail -60 build-later.log; exit "$later_status"; fi
stage "ctest (ThreadSanitizer)"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
(cd build-tsan && ctest --output-on-failure -j "$test_jobs" \
  -R '^(ThreadsTransport|Doorbell|Communicator|ReduceKernel|Watchdog)\.|SimtKernels\.|^Simt(Runtime|Launch|Stack|Schedules)\.|^tsan_' \
  -E 'RefusalsAreUsageErrorsWithReasons')  # that one expects an MPI build

stage "build variants (optional parts hidden, dependencies fetched from local copies)"
# GoogleTest, Google Benchmark and gnuplot-iostream hidden, CLI11 / nlohmann-json / GoogleTest through FetchContent
# from local copies: the programs still build and the configure says what it left out (docs/install.md).
tests/build/configure_variants.sh build-variants

stage "fuzz (fixed seed and runs)"
scripts/fuzz.sh --ci
stage ""
