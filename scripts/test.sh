#!/usr/bin/env bash
# Sets up, builds and runs every test (ctest), then the unit tests once more and the cuda path (ctest label gpu)
# in an AddressSanitizer + UndefinedBehaviorSanitizer build on emulated GPUs (PARBENCH_CUDA=EMULATED), where ASan
# also sees kernels that overrun device buffers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

echo "== build (default)"
# -g1 (line tables: stack traces keep files and lines) instead of -g: a quarter less compile time.
BUILD_DIR=build scripts/build.sh "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
echo "== ctest (default build)"
(cd build && ctest --output-on-failure -j "$jobs" -LE quiet_machine)  # predict_vs_cpu_runs needs idle cores

echo "== build (sanitizers)"
# -O1: the emulated GPU runs every kernel on the CPU under ASan; unoptimised, the gpu label alone took 9 minutes.
BUILD_DIR=build-asan scripts/build.sh -DPARBENCH_SANITIZE=ON -DPARBENCH_CUDA=EMULATED -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1"
echo "== ctest (sanitizers, unit tests)"
# OpenMPI's own allocations outlive MPI_Finalize, so the unit tests that start mpirun check memory errors but
# not leaks; every other unit test checks leaks too.
export UBSAN_OPTIONS=print_stacktrace=1
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -L unit -E 'Mpi|gpu')
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j "$jobs" -L unit -R 'Mpi')
echo "== ctest (sanitizers, emulated GPUs: the cuda path under three stream-timing seeds)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j "$jobs" -L gpu)
