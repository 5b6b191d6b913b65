#!/usr/bin/env bash
# The build with only what every program needs: Boost, GoogleTest, Google Benchmark and gnuplot-iostream hidden
# from find_package, CLI11, nlohmann-json, fast-cpp-csv-parser and GoogleTest taken by FetchContent from local
# copies (nothing downloaded).
#   tests/build/configure_variants.sh BUILD_ROOT
# 1. fetch/: one configure + build with PARBENCH_FETCH_DEPS=ON: CLI11, nlohmann-json and csv.h from copies of the
#    system's headers laid out as upstream does, GoogleTest from /usr/src/googletest (Debian's source); the summary
#    must say what was fetched and left out; bench_allreduce, bench_train, test_coll_table and test_simt (the simt
#    fibers on ucontext, Boost.Context being hidden) are built and run.
# 2. auto/: configure only, PARBENCH_FETCH_DEPS=AUTO with CLI11, nlohmann-json and GoogleTest hidden: the first two
#    fetched, the tests left out.
# 3. off/: configure only, PARBENCH_FETCH_DEPS=OFF with CLI11 hidden: must fail naming the package and the option.
# Needs libcli11-dev, nlohmann-json3-dev and googletest (Debian). Exit status 0 when every check passed.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_ROOT" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
root=$(cd "$1" && pwd)
start=$SECONDS

fail() { echo "configure_variants: FAIL: $*" >&2; exit 1; }
for need in /usr/include/CLI/CLI.hpp /usr/include/nlohmann/json.hpp /usr/include/libfccp/csv.h \
  /usr/src/googletest/CMakeLists.txt; do
  [ -e "$need" ] || fail "$need missing (Debian: libcli11-dev, nlohmann-json3-dev, libfccp-dev, googletest)"
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

# Local stand-ins for the upstream archives: just the headers, in the upstream layout.
src=$root/src
rm -rf "$src"
mkdir -p "$src/cli11/include" "$src/json/include" "$src/fccp"
cp -r /usr/include/CLI "$src/cli11/include/"
cp -r /usr/include/nlohmann "$src/json/include/"
cp /usr/include/libfccp/csv.h "$src/fccp/"  # upstream keeps csv.h at its top

common=(-DPARBENCH_CUDA=OFF -DPARBENCH_MPI=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0
        -DFETCHCONTENT_FULLY_DISCONNECTED=ON
        "-DFETCHCONTENT_SOURCE_DIR_CLI11=$src/cli11" "-DFETCHCONTENT_SOURCE_DIR_NLOHMANN_JSON=$src/json"
        "-DFETCHCONTENT_SOURCE_DIR_FCCP=$src/fccp" -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_GnuplotIostream=ON)

# Configures into $root/$1 (fresh), the log in $root/$1.log; the rest of the arguments go to cmake.
configure() {
  local dir=$root/$1
  shift
  rm -rf "$dir"
  cmake -S "$repo" -B "$dir" "${generator[@]}" "${common[@]}" "$@" >"$dir.log" 2>&1
}
# Fails unless the log $1 holds the fixed string $2.
expect() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$(basename "$1") lacks: $2"; }; }

# 1. The fetch path, built.
fetch=$root/fetch
configure fetch -DPARBENCH_FETCH_DEPS=ON -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON || { cat "$fetch.log" >&2; fail "configure of fetch/ failed"; }
expect "$fetch.log" "-- parbench: fetched: CLI11 from $src/cli11"
expect "$fetch.log" "-- parbench: fetched: nlohmann_json from $src/json"
expect "$fetch.log" "-- parbench: fetched: fast-cpp-csv-parser from $src/fccp"
expect "$fetch.log" "-- parbench: fetched: googletest from /usr/src/googletest"
expect "$fetch.log" "-- parbench: left out: simt's Boost.Context fibers (not found; the simt device switches with ucontext, about ten times slower"
expect "$fetch.log" "-- parbench: left out: bench_kernels (Google Benchmark not found"
expect "$fetch.log" "-- parbench: left out: parbench-plot (not found: Boost iostreams/filesystem/system"
# The fetched headers come before the system's on the command line, so they are the ones compiled.
grep -qF -- "-isystem $src/cli11/include" "$fetch/compile_commands.json" || fail "no compile takes $src/cli11/include"
grep -qF -- "-isystem $src/json/include" "$fetch/compile_commands.json" || fail "no compile takes $src/json/include"
grep -qF -- "-isystem $fetch/_deps/fccp-include" "$fetch/compile_commands.json" || fail "no compile takes the fetched csv.h"
! grep -qF -- "boost" "$fetch/compile_commands.json" || fail "a compile of fetch/ names Boost, which is hidden"
cmake --build "$fetch" -j "$(nproc)" --target bench_allreduce bench_train test_coll_table test_simt >"$fetch.build.log" 2>&1 ||
  { tail -40 "$fetch.build.log" >&2; fail "build of fetch/ failed"; }
[ ! -e "$fetch/bin/bench_kernels" ] || fail "bench_kernels was built without Google Benchmark"
out=$("$fetch/bin/bench_allreduce" --ranks 2 -b 8 -e 1K -f 2 -n 2 2>&1) || { echo "$out" >&2; fail "bench_allreduce"; }
grep -qF "# Out of bounds values : 0 OK" <<<"$out" || { echo "$out" >&2; fail "bench_allreduce found wrong values"; }
"$fetch/bin/bench_train" --help >/dev/null || fail "bench_train --help"
"$fetch/bin/test_coll_table" >"$fetch.test.log" 2>&1 || { cat "$fetch.test.log" >&2; fail "test_coll_table"; }
"$fetch/bin/test_simt" >"$fetch.simt.log" 2>&1 || { tail -40 "$fetch.simt.log" >&2; fail "test_simt on ucontext fibers"; }

# 2. AUTO: what find_package missed is fetched where every program needs it; the tests are left out.
configure auto -DPARBENCH_FETCH_DEPS=AUTO || { cat "$root/auto.log" >&2; fail "configure of auto/ failed"; }
expect "$root/auto.log" "-- parbench: fetched: CLI11 from $src/cli11"
expect "$root/auto.log" "-- parbench: left out: tests (GoogleTest not found; -DPARBENCH_FETCH_DEPS=ON fetches it)"

# 3. OFF: a missing CLI11 stops the configure, naming the package, its packages and the option.
if configure off -DPARBENCH_FETCH_DEPS=OFF; then
  fail "configure with PARBENCH_FETCH_DEPS=OFF and CLI11 hidden succeeded"
fi
expect "$root/off.log" "parbench needs CLI11"
expect "$root/off.log" "libcli11-dev"
expect "$root/off.log" "cli11-devel"
expect "$root/off.log" "-DPARBENCH_FETCH_DEPS=AUTO"

echo "configure_variants: OK (fetch, auto and off; $((SECONDS - start)) s)"
