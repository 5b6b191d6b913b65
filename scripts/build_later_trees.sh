#!/usr/bin/env bash
# The trees scripts/test.sh builds beside its sanitizer stages and runs after them: build-tsan (what the
# ThreadSanitizer stage runs: the threads transport, DDP's communication thread, the pipeline executor and simt's
# fibers; CPU devices only, no MPI, whose own threads are not instrumented; -O1 -g1 to keep it short) and
# build-fuzz (scripts/fuzz.sh --build-only). Usage: scripts/build_later_trees.sh [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-$(nproc)}
cmake -S . -B build-tsan -G Ninja -DPARBENCH_SANITIZE=thread -DPARBENCH_CUDA=OFF -DPARBENCH_MPI=OFF \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" >build-tsan.configure.log 2>&1 ||
  { cat build-tsan.configure.log; exit 1; }
cmake --build build-tsan -j "$jobs" --target test_coll_threads_transport test_coll_communicator test_coll_watchdog \
  test_simt bench_train
scripts/fuzz.sh --build-only
