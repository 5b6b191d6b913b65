#!/usr/bin/env bash
# Sets up, builds and runs every test (ctest), then the unit tests once more in an
# AddressSanitizer + UndefinedBehaviorSanitizer build (without CUDA, to keep CI short).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

echo "== build (default)"
BUILD_DIR=build scripts/build.sh
echo "== ctest (default build)"
(cd build && ctest --output-on-failure -j "$jobs")

echo "== build (sanitizers)"
BUILD_DIR=build-asan scripts/build.sh -DPARBENCH_SANITIZE=ON -DPARBENCH_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
echo "== ctest (sanitizers, unit tests)"
# OpenMPI's own allocations outlive MPI_Finalize, so the unit tests that start mpirun check memory errors but
# not leaks; every other unit test checks leaks too.
export UBSAN_OPTIONS=print_stacktrace=1
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs" -L unit -E 'Mpi')
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j "$jobs" -L unit -R 'Mpi')
