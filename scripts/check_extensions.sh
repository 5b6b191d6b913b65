#!/usr/bin/env bash
# Proves the "How to extend" rows of docs/dev/extending.md: in a scratch copy of the tree it adds a dummy schedule,
# scheme, collective algorithm, device-side collective algorithm, kernel op and collective exactly as their rows
# say, checks that the files it had to touch are the ones the row names and no others, builds a CPU-only build of
# the programs (and an emulated-GPU one of what the device-side entry needs), and shows each dummy picked up
# everywhere: help texts, bench_train --list-runnable, the CTest lists made from the registries, the op table's
# tests (the dummy op's backwards against finite differences of its forwards among them), and a run that passes
# its check. Usage: scripts/check_extensions.sh [SCRATCH_DIR] (default
# build-extensions/; replaced).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
scratch=${1:-build-extensions}
case "$scratch" in /*) ;; *) scratch="$src/$scratch" ;; esac
rm -rf "$scratch"
mkdir -p "$scratch/pristine" "$scratch/tree"
# The tracked tree and new files git does not ignore, as they are in the working tree (a tracked file deleted or
# moved there and not yet committed is left out).
git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
  if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
done | tar --null -T - -cf - | tar -xf - -C "$scratch/pristine"
cp -a "$scratch/pristine/." "$scratch/tree/"
tree=$scratch/tree
fail() { echo "check_extensions: $*" >&2; exit 1; }

# --- a pipeline schedule: parallel/schedule/NAME.cpp and its line (with its declaration) in schedule.cpp
sed 's/gpipe/dummysched/g; s/GPipe/Dummysched/g' "$tree/parallel/schedule/gpipe.cpp" >"$tree/parallel/schedule/dummysched.cpp"
sed -i 's/^ScheduleKind gpipe_schedule();/&\nScheduleKind dummysched_schedule();/; s/{gpipe_schedule(), /{gpipe_schedule(), dummysched_schedule(), /' \
  "$tree/parallel/schedule/schedule.cpp"

# --- a parallelism scheme: parallel/schemes/NAME.cpp (its maker), its kind, its maker by name and declaration
cat >"$tree/parallel/schemes/dummyscheme.cpp" <<'EOF'
// A scheme that trains as ddp does, under its own name.
#include "parallel/schemes/data_parallel.h"

namespace parbench {

std::unique_ptr<Scheme> make_dummyscheme(const TrainConfig& cfg, RankContext ctx) { return make_ddp(cfg, ctx); }

}  // namespace parbench
EOF
sed -i 's/^\( *\){\.name = "ddp", \.summary = .*$/&\n\1{.name = "dummyscheme", .summary = "ddp under another name"},/' \
  "$tree/parallel/scheme_kinds.cpp"
sed -i 's/^\( *\){"ddp", make_ddp},$/&\n\1{"dummyscheme", make_dummyscheme},/' "$tree/parallel/schemes/registry.cpp"
sed -i 's/^std::unique_ptr<Scheme> make_ddp(const TrainConfig& cfg, RankContext ctx);$/&\nstd::unique_ptr<Scheme> make_dummyscheme(const TrainConfig\& cfg, RankContext ctx);/' \
  "$tree/parallel/schemes/data_parallel.h"

# --- a collective algorithm: collectives/algorithms/algo_NAME.cpp and its line in collectives/registry.cpp
sed 's/make_naive_algorithm/make_dummyalgo_algorithm/; s/return "naive";/return "dummyalgo";/' \
  "$tree/collectives/algorithms/algo_naive.cpp" >"$tree/collectives/algorithms/algo_dummyalgo.cpp"
sed -i 's/^\( *\)X(naive, "naive", host, 7) *\\$/&\n\1X(dummyalgo, "dummyalgo", host, 0) \\/' "$tree/collectives/registry.cpp"

# --- a device-side collective algorithm: collectives/device_side/dev_NAME.cu and algo_NAME_dev.cpp (a copy of
# ring-dev's pair, its launcher renamed and declared in its .cpp, serving allreduce and allgather only) and its row
dev=$tree/collectives/device_side
sed 's/\bsymm_ring\b/symm_dummy/g' "$dev/dev_ring.cu" >"$dev/dev_dummy.cu"
sed 's/make_ring_dev_algorithm/make_dummy_dev_algorithm/; s/cuda_kernels::symm_ring(/cuda_kernels::symm_dummy(/; s/RingDevice/DummyDevice/g' \
  "$dev/algo_ring_dev.cpp" >"$dev/algo_dummy_dev.cpp"
sed -i 's/^namespace parbench {$/&\n#ifdef PARBENCH_HAVE_CUDA\nnamespace cuda_kernels {\nvoid symm_dummy(const SymmPeers\& p, int coll, const void* send, void* recv, unsigned long long count, int dtype,\n                int op, void* stream);\n}  \/\/ namespace cuda_kernels\n#endif/' \
  "$dev/algo_dummy_dev.cpp"
sed -i 's/^\( *\)D(ring_dev, "ring-dev", allreduce, reduce_scatter, allgather) *\\$/&\n\1D(dummy_dev, "dummy-dev", allreduce, allgather) \\/' \
  "$tree/collectives/registry.cpp"

# --- a kernel op: kernels/<op>.cu and kernels/<op>.cpp and its lines in kernels/op_list.h (a copy of the gelu
# pair, four ops, renamed, each forward naming its backward; the GELU math they share stays theirs)
for ext in cu cpp; do
  sed 's/\bgelu_forward/dummyop_forward/g; s/\bgelu_backward/dummyop_backward/g; s/bias_gelu_/bias_dummyop_/g' \
    "$tree/kernels/gelu.$ext" >"$tree/kernels/dummyop.$ext"
done
dummy_rows=$(cat <<'EOF_ROWS'
  X(dummyop_forward, OpKind::per_dtype, backward("dummyop_backward"), cost(CostRole::memory)) \
  X(dummyop_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory)) \
  X(bias_dummyop_forward, OpKind::per_dtype, backward("bias_dummyop_backward"), cost(CostRole::memory)) \
  X(bias_dummyop_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory)) \
EOF_ROWS
)
dummy_rows=$dummy_rows awk '{ print } /^ *X\(gelu_forward, OpKind::per_dtype, .*\\$/ { print ENVIRON["dummy_rows"] }' \
  "$tree/kernels/op_list.h" >"$tree/kernels/op_list.h.new"
mv "$tree/kernels/op_list.h.new" "$tree/kernels/op_list.h"
grep -q 'X(bias_dummyop_backward, OpKind::per_dtype, kBackward' "$tree/kernels/op_list.h" ||
  fail "the dummy op's rows were not added to kernels/op_list.h"

# --- a collective (a copy of allreduce's row, last, served by naive): its Collective value, its table row, and a
# case in the implementation that serves it; the others refuse it through unsupported()
sed -i 's/sendrecv, alltoallv, hypercube$/sendrecv, alltoallv, hypercube, allreduce2/' "$tree/collectives/table/types.h"
sed -i 's/^\( *\)block, block_offset, hypercube},$/&\n\1{Collective::allreduce2, "allreduce2", "all_reduce2", false, true, count, count,\n\1 reduced, same, ring_twice},/' \
  "$tree/collectives/table/collective_table.cpp"
sed -i 's/^\( *\)case Collective::allreduce:$/\1case Collective::allreduce2:\n&/' "$tree/collectives/algorithms/algo_naive.cpp"
sed -i 's/^\( *\){Collective::sendrecv, {{5, 5}, {5, 5}, 100, 0, 1.0, false, false}},$/&\n\1{Collective::allreduce2, {{5, 5}, {5, 5}, 100, 0, 1.5, false, true}},/' \
  "$tree/tests/collectives/test_collective_table.cpp"

# --- the files touched are those the rows name (the page's paths in backquotes, NAME and <op> standing for any name)
rows_page=docs/dev/extending.md
extend_row() { grep -F "| $1 |" "$src/$rows_page" || fail "$rows_page has no How to extend row '$1'"; }
row_paths() {  # a row's backquoted paths as glob patterns, one a line ({h,cpp} expanded)
  grep -o '`[^`]*`' <<<"$1" | tr -d '`' | sed 's/NAME/*/g; s/<op>/*/g' | while read -r p; do
    if [[ $p =~ ^(.*)\{([^}]*)\}(.*)$ ]]; then
      local alt
      for alt in ${BASH_REMATCH[2]//,/ }; do echo "${BASH_REMATCH[1]}$alt${BASH_REMATCH[3]}"; done
    else
      echo "$p"
    fi
  done
}
check_row() {  # row, then the files touched for it
  local row=$1 text f pattern named
  text=$(extend_row "$row")
  shift
  for f in "$@"; do
    [ -e "$scratch/pristine/$f" ] && cmp -s "$scratch/pristine/$f" "$tree/$f" &&
      fail "$f was not changed by the '$row' addition"
    named=0
    while read -r pattern; do
      # shellcheck disable=SC2053  # the pattern is a glob on purpose
      [[ $f == $pattern ]] && named=1
    done < <(row_paths "$text")
    [ "$named" = 1 ] || fail "the '$row' row of $rows_page does not name $f"
  done
}
check_row "a pipeline schedule" parallel/schedule/dummysched.cpp parallel/schedule/schedule.cpp
check_row "a parallelism scheme" parallel/schemes/dummyscheme.cpp parallel/scheme_kinds.cpp \
  parallel/schemes/registry.cpp parallel/schemes/data_parallel.h
check_row "a collective algorithm" collectives/algorithms/algo_dummyalgo.cpp collectives/registry.cpp
check_row "a device-side collective algorithm" collectives/device_side/dev_dummy.cu \
  collectives/device_side/algo_dummy_dev.cpp collectives/registry.cpp
check_row "a kernel op" kernels/dummyop.cu kernels/dummyop.cpp kernels/op_list.h
check_row "a collective" collectives/table/types.h collectives/table/collective_table.cpp collectives/algorithms/algo_naive.cpp \
  tests/collectives/test_collective_table.cpp
touched=$(cd "$scratch" && { diff -rq pristine tree || true; } | sed -E 's#^Only in tree/?([^:]*): (.*)$#\1/\2#; s#^Files pristine/([^ ]*) and .*#\1#; s#^/##' | sort)
expected=$(printf '%s\n' parallel/schedule/dummysched.cpp parallel/schedule/schedule.cpp \
  parallel/schemes/dummyscheme.cpp parallel/scheme_kinds.cpp parallel/schemes/registry.cpp \
  parallel/schemes/data_parallel.h collectives/algorithms/algo_dummyalgo.cpp collectives/registry.cpp kernels/dummyop.cu \
  collectives/device_side/dev_dummy.cu collectives/device_side/algo_dummy_dev.cpp \
  kernels/dummyop.cpp kernels/op_list.h collectives/table/types.h collectives/table/collective_table.cpp \
  collectives/algorithms/algo_naive.cpp tests/collectives/test_collective_table.cpp | sort)
[ "$touched" = "$expected" ] || fail "touched files differ from the rows': $(diff <(echo "$expected") <(echo "$touched") | tr '\n' ' ')"
echo "check_extensions: the additions touch $(echo "$touched" | wc -l) files, each named by its row in $rows_page"

# --- build what shows them: CPU only, unoptimised (the checks run tiny sizes), in unity batches as the real build
# but the copies file by file: they keep the file-local names of the files they copy, which one batch would see
# twice. (The scratch tree's top-level CMakeLists.txt gets the lines that say so, after the touched-files check.)
cat >>"$tree/CMakeLists.txt" <<'EOF_CMAKE'
set_source_files_properties(${CMAKE_SOURCE_DIR}/parallel/schedule/dummysched.cpp
  ${CMAKE_SOURCE_DIR}/parallel/schemes/dummyscheme.cpp DIRECTORY parallel PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
set_source_files_properties(${CMAKE_SOURCE_DIR}/collectives/algorithms/algo_dummyalgo.cpp
  DIRECTORY collectives/algorithms PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
set_source_files_properties(${CMAKE_SOURCE_DIR}/collectives/device_side/algo_dummy_dev.cpp
  ${CMAKE_BINARY_DIR}/collectives/device_side/simt_wrappers/collectives_device_side_dev_dummy.cu.cpp
  DIRECTORY collectives/device_side PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
set_source_files_properties(${CMAKE_SOURCE_DIR}/kernels/dummyop.cpp
  ${CMAKE_BINARY_DIR}/kernels/simt_wrappers/kernels_dummyop.cu.cpp DIRECTORY kernels
  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
EOF_CMAKE
cmake -S "$tree" -B "$scratch/build" -G Ninja -DPARBENCH_CUDA=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O0" >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log"; exit 1; }
cmake --build "$scratch/build" -j "$(nproc)" --target bench_train bench_allreduce bench_allreduce2 test_op_table \
  test_coll_table test_coll_bench_cli >"$scratch/build.log" 2>&1 ||
  { tail -40 "$scratch/build.log"; exit 1; }
bin=$scratch/build/bin

expect_in() {  # what, needle, then the command that must succeed with the needle in its output
  local what=$1 needle=$2 out
  shift 2
  out=$("$@" 2>&1) || fail "$what: '$*' failed: $out"
  [[ "$out" == *"$needle"* ]] || fail "$what: '$*' does not print $needle"
  echo "check_extensions: $what: $needle"
}
expect_in "bench_train --help" dummysched "$bin/bench_train" --help
expect_in "bench_train --help" dummyscheme "$bin/bench_train" --help
expect_in "bench_train --list-runnable" dummysched "$bin/bench_train" --list-runnable
expect_in "bench_train --list-runnable" dummyscheme "$bin/bench_train" --list-runnable
expect_in "bench_allreduce --help" dummyalgo "$bin/bench_allreduce" --help
expect_in "bench_allreduce2 --help" "nccl-tests' all_reduce2_perf" "$bin/bench_allreduce2" --help
expect_in "the collective table's test (names CMake read, every row)" "[  PASSED  ]" "$bin/test_coll_table"
expect_in "test_op_table's tests" dummyop_forward "$bin/test_op_table" --gtest_list_tests
expect_in "test_op_table's tests" bias_dummyop_backward "$bin/test_op_table" --gtest_list_tests
ctest_list=$(cd "$scratch/build" && ctest -N)
for t in pp_dummysched dummyscheme; do
  grep -q "train_mpi2_$t\b" <<<"$ctest_list" || fail "ctest's list has no train_mpi2_$t test"
  echo "check_extensions: ctest's list has train_mpi2_$t"
done

# --- and each one runs and passes its check (bench_train exits 1 when the difference from single-rank training
# exceeds --check-tolerance)
tiny=(--device cpu --model gpt --layers 4 --hidden 16 --heads 2 --seq 6 --vocab 24 --optimizer sgd --lr 0.1 --steps 2
      --warmup 0 --global-batch 8 --check --check-tolerance 1e-5 --timeout 60 --ranks 2)
expect_in "a dummysched run" "dummysched" "$bin/bench_train" "${tiny[@]}" --scheme pp --schedule dummysched \
  --microbatches 4
expect_in "a dummyscheme run" "dummyscheme" "$bin/bench_train" "${tiny[@]}" --scheme dummyscheme --micro-batch 2
expect_in "a dummyalgo run" "Out of bounds values : 0 OK" "$bin/bench_allreduce" --device cpu --ranks 3 \
  --impl dummyalgo -b 8 -e 64K -f 8 -n 1
expect_in "a bench_allreduce2 run" "Out of bounds values : 0 OK" "$bin/bench_allreduce2" --device cpu --ranks 3 \
  --impl naive,ring -o all -b 8 -e 64K -f 8 -n 1
expect_in "every bench_<collective> program" "[  PASSED  ] 1 test." "$bin/test_coll_bench_cli" \
  --gtest_filter=BenchCli.EveryProgramRunsClean
expect_in "the op table's three-way check" "[  PASSED  ] 4 tests." "$bin/test_op_table" \
  --gtest_filter='*dummyop*f32*forward'
# The dummy pairs' gradient checks come from their rows alone: listed, run, and each gradient printed.
expect_in "test_op_table's gradient checks" "MatchFiniteDifferencesOfTheForward/dummyop_backward" "$bin/test_op_table" \
  --gtest_list_tests
expect_in "test_op_table's gradient checks" "MatchFiniteDifferencesOfTheForward/bias_dummyop_backward" \
  "$bin/test_op_table" --gtest_list_tests
fd_out=$("$bin/test_op_table" --gtest_filter='*OpTableGradients*dummyop*' 2>&1) ||
  fail "the dummy op's gradient checks failed: $fd_out"
for want in "[  PASSED  ] 2 tests." "[table-fd] dummyop_backward " "[table-fd] bias_dummyop_backward "; do
  [[ "$fd_out" == *"$want"* ]] || fail "the dummy op's gradient checks do not print '$want': $fd_out"
done
for grad in "dummyop_backward .* dinp " "bias_dummyop_backward .* dinp " "bias_dummyop_backward .* dbias "; do
  grep -q "^\[table-fd\] $grad" <<<"$fd_out" || fail "no finite-difference check of $grad in: $fd_out"
done
fd_count=$(grep -c '^\[table-fd\]' <<<"$fd_out")
echo "check_extensions: the dummy op's gradient checks (finite differences, from its rows alone): $fd_count gradients"
# --- the device-side one on the emulated GPU (its own build: the device-side collectives need the cuda device):
# listed from its row, its tests made from the listing, its data check clean, its planted race caught
cmake -S "$tree" -B "$scratch/build-emu" -G Ninja -DPARBENCH_CUDA=EMULATED -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0" >"$scratch/configure-emu.log" 2>&1 ||
  { cat "$scratch/configure-emu.log"; exit 1; }
cmake --build "$scratch/build-emu" -j "$(nproc)" --target bench_allreduce bench_allgather test_device_collectives \
  >"$scratch/build-emu.log" 2>&1 || { tail -40 "$scratch/build-emu.log"; exit 1; }
emu=$scratch/build-emu/bin
expect_in "bench_allreduce --list-impls" "dummy-dev device allreduce,allgather" "$emu/bench_allreduce" --list-impls
emu_list=$(cd "$scratch/build-emu" && ctest -N -V 2>&1)
for t in gpu_dummy-dev_skipped_wait_caught_seed1 gpu_dummy-dev_allgather_skipped_wait_caught_seed1 \
  gpu_dummy-dev_stalled_rank_named; do
  grep -q "Test *#[0-9]*: $t\$" <<<"$emu_list" || fail "ctest's list in the emulated build has no $t test"
  echo "check_extensions: ctest's list has $t"
done
(cd "$scratch/build-emu" && ctest -N -V -R '^gpu_bench_allgather_dev_threads3$') | grep 'Test command' |
  grep -q '"--impl" "[a-z,-]*dummy-dev' || fail "gpu_bench_allgather_dev_threads3 does not run dummy-dev"
echo "check_extensions: gpu_bench_allgather_dev_threads3 runs dummy-dev"
expect_in "a dummy-dev run" "Out of bounds values : 0 OK" env PARBENCH_EMU_GPUS=4 "$emu/bench_allgather" \
  --device cuda --ranks 3 --impl dummy-dev --sizes 1K,33K -n 1 -w 1 --timeout 60
(cd "$scratch/build-emu" && ctest -R '^gpu_dummy-dev_skipped_wait_caught_seed1$' >"$scratch/ctest-emu.log" 2>&1) ||
  { cat "$scratch/ctest-emu.log"; fail "the planted race in dummy-dev's kernel was not caught"; }
echo "check_extensions: gpu_dummy-dev_skipped_wait_caught_seed1 passed (the planted race caught)"
expect_in "test_device_collectives" "TimedBatchOfEachCollective/dummy_allgather" env PARBENCH_EMU_GPUS=4 \
  "$emu/test_device_collectives" --gtest_filter='*dummy*'
echo "check_extensions: every dummy entry was picked up and passed its checks"
