#!/usr/bin/env bash
# Finds what parbench's build, demo and tests need by looking for it (commands on PATH, headers and libraries
# where the compiler and CMake look), not in a package database, so libraries from modules, conda or a hand-built
# prefix count; installs what is missing with apt-get or dnf only when asked or allowed.
#
#   scripts/setup.sh --check   [--for demo|test]  what is missing, with package names; installs nothing;
#                                                 exit 1 when something required is missing
#   scripts/setup.sh --install [--for demo|test]  apt-get (Debian/Ubuntu) or dnf (RHEL/Rocky/Fedora), through
#                                                 sudo when not root; lizard from PyPI into the user's site
#   scripts/setup.sh           [--for demo|test]  --check, then --install when something is missing and this
#                                                 may install (root, or PARBENCH_INSTALL=1); else the report
#                                                 and the command that would install, exit 1
# --for demo: the programs and the figures (scripts/demo.sh); --for test (default): all scripts/test.sh needs.
#   scripts/setup.sh --torch                       PyPI's torch (torchrun, for the cluster tests' torchrun case) into
#                                                 a virtual environment kept outside the tree,
#                                                 $PARBENCH_TORCH_VENV or ~/.cache/parbench/torch-venv (about 5 GB)
# --hint CMD: the install command to suggest instead of `scripts/setup.sh --install --for P` (demo.sh passes
# "PARBENCH_INSTALL=1 scripts/demo.sh"). Quiet ("setup: all present") when nothing is missing.
# nvcc is never required (without it the build has the cpu and simt devices); --for test needs the CUDA toolkit's
# headers, for scripts/test.sh's emulated-GPU build.
# For this script's tests only: PARBENCH_SETUP_PRETEND_MISSING=id,id (ids of the table below),
# PARBENCH_SETUP_UID (the uid to act as), PARBENCH_SETUP_OS_RELEASE (a file read instead of /etc/os-release).
set -euo pipefail
set -f  # no globbing: the table's words ("test?") are split, never matched against files
root_dir=$(cd "$(dirname "$0")/.." && pwd)

# One row per need. probe: every term must hold (cmd:NAME on PATH, hdr:FILE in an include folder, lib:NAME as
# libNAME.so or .a, static:NAME as libNAME.a, or a check of its own below). Package columns: "-" none, "=" as
# Debian's, {clang-rt} clang's runtime (named per release), @epel/@crb the RHEL repository it is in, pip:NAME PyPI.
# profiles: "demo test" required for both, "demo?" optional for the demo.
# Names that differ or may be absent: clang's runtime is libclang-rt-N-dev on Debian 12 and Ubuntu 24.04 but inside
# libclang-common-N-dev on Ubuntu 22.04; libfccp-dev and libgnuplot-iostream-dev are Debian's and may be absent from
# an Ubuntu release (--install then says the archive lacks them and their fallback below applies); RHEL has neither,
# and several RHEL names live in EPEL or CRB, which --install enables first.
needs_table=$(cat <<'EOF'
# id             | probe                                              | debian                  | ubuntu     | rhel                         | profiles    | needed for
cmake            | cmake                                              | cmake                   | =          | cmake                        | demo test   | configuring the build
ninja            | cmd:ninja                                          | ninja-build             | =          | ninja-build@crb              | demo test   | building (scripts/build.sh uses -G Ninja)
cxx              | cxx20                                              | g++                     | =          | gcc-c++                      | demo test   | compiling (C++20: $CXX, g++ or clang++)
mpirun           | cmd:mpirun                                         | openmpi-bin             | =          | openmpi                      | demo? test  | runs under mpirun (without it the demo starts ranks with --ranks)
mpicc            | cmd:mpicc                                          | libopenmpi-dev          | =          | openmpi-devel                | demo? test  | the MPI transport and the mpirun tests (PARBENCH_MPI)
gnuplot          | cmd:gnuplot                                        | gnuplot-nox             | =          | gnuplot                      | demo test   | drawing the figures (parbench-plot)
column           | cmd:column                                         | bsdextrautils           | =          | util-linux                   | demo        | the tables demo.sh prints
python3          | cmd:python3                                        | python3                 | =          | python3                      | test        | the structure checks and script tests
git              | cmd:git                                            | git                     | =          | git                          | test        | the extension check (copies the tracked tree)
cli11            | hdr:CLI/CLI.hpp                                    | libcli11-dev            | =          | cli11-devel@epel             | demo? test? | every program's options
nlohmann-json    | hdr:nlohmann/json.hpp                              | nlohmann-json3-dev      | =          | json-devel@epel              | demo? test? | JSON output and traces
fccp             | fccp                                               | libfccp-dev             | =          | -                            | demo? test? | reading CSV files (schedule files, parbench-plot)
gnuplot-iostream | hdr:gnuplot-iostream.h                             | libgnuplot-iostream-dev | =          | -                            | demo test   | parbench-plot's pipe to gnuplot
gtest            | hdr:gtest/gtest.h lib:gtest                        | libgtest-dev            | =          | gtest-devel@epel             | test        | the unit tests (the build leaves them out without it)
gmock            | hdr:gmock/gmock.h lib:gmock                        | libgmock-dev            | =          | gmock-devel@epel             | test        | the unit tests' mocks
benchmark        | hdr:benchmark/benchmark.h lib:benchmark            | libbenchmark-dev        | =          | google-benchmark-devel@epel  | test        | bench_kernels (the build leaves it out without it)
boost-iostreams  | hdr:boost/iostreams/stream.hpp lib:boost_iostreams | libboost-iostreams-dev  | =          | boost-devel                  | demo test   | parbench-plot
boost-filesystem | hdr:boost/filesystem.hpp lib:boost_filesystem      | libboost-filesystem-dev | =          | boost-devel                  | demo test   | parbench-plot
boost-system     | lib:boost_system                                   | libboost-system-dev     | =          | boost-devel                  | demo test   | parbench-plot
boost-context    | hdr:boost/context/fiber.hpp static:boost_context   | libboost-context-dev    | =          | boost-devel boost-static@crb | demo? test  | the simt device's fast fiber switch (linked statically)
cuda-headers     | cuda-headers                                       | -                       | -          | -                            | test        | the emulated GPU build of scripts/test.sh (cuda_runtime_api.h, cublas_v2.h)
nvcc             | nvcc                                               | -                       | -          | -                            | demo? test? | the cuda device
clang            | cmd:clang++                                        | clang                   | =          | clang                        | test        | the sanitizer build and the fuzzers (scripts/test.sh, scripts/fuzz.sh)
libfuzzer        | fuzzer                                             | {clang-rt}              | {clang-rt} | compiler-rt                  | test        | linking the fuzzers (clang -fsanitize=fuzzer)
lizard           | lizard                                             | pip:lizard              | pip:lizard | pip:lizard                   | test        | the code-size check (scripts/check_code_size.py)
iproute2         | cmd:ip cmd:tc                                      | iproute2                | =          | iproute iproute-tc           | test?       | the emulated cluster of tests/cluster (network namespaces, link shaping)
nftables         | cmd:nft                                            | nftables                | =          | nftables                     | test?       | packet loss on the emulated cluster
slurm            | cmd:slurmctld cmd:slurmd cmd:srun                  | slurm-wlm               | =          | slurm-slurmctld@epel slurm-slurmd@epel | test? | the Slurm test on the emulated cluster
munge            | cmd:munged cmd:mungekey                            | munge                   | =          | munge@epel                   | test?       | Slurm's authentication on the emulated cluster
EOF
)
# What to do where no package helps (cmake/ParbenchDeps.cmake: what the build fetches and which folders it takes).
fetched="header-only: the build downloads it when not found (PARBENCH_FETCH_DEPS=AUTO, the default)"
declare -A fallback=(
  [cli11]=$fetched
  [nlohmann-json]=$fetched
  [gtest]="-DPARBENCH_FETCH_DEPS=ON lets the build download GoogleTest"
  [gmock]="-DPARBENCH_FETCH_DEPS=ON lets the build download GoogleTest (GoogleMock is part of it)"
  [fccp]="$fetched; or copy fast-cpp-csv-parser's csv.h into DIR/libfccp/ and configure with -DPARBENCH_FCCP_INCLUDE_DIR=DIR"
  [gnuplot-iostream]="where not packaged: gnuplot-iostream.h into PREFIX/include with PREFIX on CMAKE_PREFIX_PATH, or -DPARBENCH_GNUPLOT_IOSTREAM_INCLUDE_DIR=DIR"
  [boost-context]="without it the simt device switches its fibers with POSIX ucontext: the same results, about ten times slower"
  [cuda-headers]="NVIDIA's CUDA toolkit (its apt or dnf repository, or the runfile); CUDA_HOME when not in /usr/local/cuda"
  [nvcc]="NVIDIA's CUDA toolkit; without it the build has the cpu and simt devices only"
  [lizard]="python3 -m pip install --user lizard (or pipx install lizard)"
)

mode=auto profile=test hint=""
while [ $# -gt 0 ]; do
  case $1 in
    --check) mode=check ;;
    --install) mode=install ;;
    --torch) mode=torch ;;
    --for) profile=${2:-}; shift ;;
    --for=*) profile=${1#--for=} ;;
    --hint) hint=${2:-}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $profile in demo|test) ;; *) echo "setup: --for takes demo or test, not '$profile'" >&2; exit 2 ;; esac
if [ "$mode" = torch ]; then
  venv=${PARBENCH_TORCH_VENV:-$HOME/.cache/parbench/torch-venv}
  if [ -x "$venv/bin/torchrun" ]; then echo "setup: torchrun present in $venv"; exit 0; fi
  python3 -m venv "$venv" || { echo "setup: python3 -m venv $venv failed (Debian: python3-venv)" >&2; exit 1; }
  "$venv/bin/pip" install --quiet torch || { echo "setup: pip install torch into $venv failed" >&2; exit 1; }
  echo "setup: torchrun installed in $venv"
  exit 0
fi

# --- the system: its family (debian, ubuntu, rhel, fedora, other) and release
os_release=${PARBENCH_SETUP_OS_RELEASE:-/etc/os-release}
os_field() { [ -r "$os_release" ] && sed -n "s/^$1=//p" "$os_release" | tr -d '"' | head -1; }
os_id=$(os_field ID || true) os_like=$(os_field ID_LIKE || true) os_version=$(os_field VERSION_ID || true)
case " $os_id $os_like " in
  *" ubuntu "*) os_family=ubuntu ;;
  *" debian "*) os_family=debian ;;
  " fedora "*) os_family=fedora ;;
  *" rhel "*|*" centos "*|*" fedora "*|" rocky "*|" almalinux "*) os_family=rhel ;;
  *) os_family=other ;;
esac
uid=${PARBENCH_SETUP_UID:-$(id -u)}

# --- where CMake looks for headers and libraries (the build finds every one with find_package or find_path), and
# where only the compiler looks (CPATH, LIBRARY_PATH and the like), which the report points out
cxx=""  # the C++20 compiler found (cxx20)
split_path() { local IFS=:; for d in $1; do [ -n "$d" ] && echo "$d"; done; return 0; }
find_cxx() {
  local c
  for c in ${CXX:-c++ g++ clang++}; do
    command -v "$c" >/dev/null 2>&1 || continue
    # A concept, <span>, and a constinit object holding a std::vector (the trace recorder's: libstdc++ 12's
    # constexpr vector, which GCC 11 lacks).
    printf '%s\n' '#include <span>' '#include <string>' '#include <vector>' \
      'template <class T> concept Int = sizeof(T) == 4;' \
      'struct R { std::vector<std::string> v; constexpr R() = default; };' 'constinit R r;' \
      'int main() { return 0; }' | "$c" -std=c++20 -fsyntax-only -x c++ - 2>/dev/null && { cxx=$c; return 0; }
  done
  return 1
}
cmake_prefixes() {  # CMAKE_PREFIX_PATH, <Package>_ROOT, the folder above each bin/ on PATH, then the system's
  local v d
  split_path "${CMAKE_PREFIX_PATH:-}"
  for v in Boost_ROOT BOOST_ROOT GTest_ROOT GTEST_ROOT benchmark_ROOT CLI11_ROOT nlohmann_json_ROOT; do
    [ -z "${!v:-}" ] || echo "${!v}"
  done
  split_path "$PATH" | while read -r d; do case $d in */bin|*/sbin) echo "${d%/*}" ;; esac; done
  echo /usr/local; echo /usr
}
include_dirs=() lib_dirs=() compiler_dirs=()
search_dirs() {
  local p arch archs=("$(uname -m)-linux-gnu")
  [ -z "$cxx" ] || arch=$("$cxx" -print-multiarch 2>/dev/null) || true
  [ -z "${arch:-}" ] || [ "$arch" = "${archs[0]}" ] || archs+=("$arch")
  mapfile -t include_dirs < <(split_path "${CMAKE_INCLUDE_PATH:-}"
    cmake_prefixes | while read -r p; do for arch in "${archs[@]}"; do echo "$p/include/$arch"; done; echo "$p/include"; done)
  mapfile -t lib_dirs < <(split_path "${CMAKE_LIBRARY_PATH:-}"
    cmake_prefixes | while read -r p; do for arch in "${archs[@]}"; do echo "$p/lib/$arch"; done; echo "$p/lib64"; echo "$p/lib"; done)
  compiler_dirs=()
}
compiler_search() {  # the compiler's own include and library folders, once, for the notes
  [ ${#compiler_dirs[@]} -eq 0 ] || return 0
  compiler_dirs=(-)
  mapfile -t -O 1 compiler_dirs < <(split_path "${CPATH:-}"; split_path "${CPLUS_INCLUDE_PATH:-}"
    split_path "${LIBRARY_PATH:-}"
    [ -z "$cxx" ] || { "$cxx" -x c++ -E -v - </dev/null 2>&1 |
      sed -n '/^#include <\.\.\.> search starts here:/,/^End of search list/{//!s/^ *\([^ ]*\).*/\1/p}'
      "$cxx" -print-search-dirs 2>/dev/null | sed -n 's/^libraries: =//p' | tr : '\n'; })
}
compiler_only() {  # FILE: a note when FILE is where only the compiler looks
  local d
  compiler_search
  for d in "${compiler_dirs[@]:1}"; do
    [ -e "$d/$1" ] || continue
    note="$d/$1 is where the compiler looks but CMake does not: add its prefix to CMAKE_PREFIX_PATH"
    return
  done
}
have_header() {
  local d
  for d in "${include_dirs[@]}"; do [ -f "$d/$1" ] && return 0; done
  compiler_only "$1"
  return 1
}
have_lib() {  # NAME [a]: libNAME.so or .a (only .a with "a")
  local d ext exts=(so a dylib)
  [ "${2:-}" = a ] && exts=(a)
  for d in "${lib_dirs[@]}"; do for ext in "${exts[@]}"; do [ -e "$d/lib$1.$ext" ] && return 0; done; done
  for ext in "${exts[@]}"; do compiler_only "lib$1.$ext"; [ -z "$note" ] || break; done
  return 1
}

# --- the probes of their own; each may leave a note that goes into the report
note=""
probe_cmake() {
  command -v cmake >/dev/null 2>&1 || return 1
  local want have
  want=$(sed -n 's/^cmake_minimum_required(VERSION \([0-9][0-9]*\(\.[0-9][0-9]*\)*\).*/\1/p' "$root_dir/CMakeLists.txt" | head -1)
  have=$(cmake --version | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
  [ -z "$want" ] || [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" = "$want" ] && return 0
  note="cmake $have found, the build needs $want or newer (python3 -m pip install --user cmake has a newer one)"
  return 1
}
probe_fccp() {  # the code includes <libfccp/csv.h>, Debian's layout
  have_header libfccp/csv.h && return 0
  [ -z "$note" ] || return 1
  local d
  for d in "${include_dirs[@]}"; do
    [ -f "$d/csv.h" ] && { note="$d/csv.h found, but the code includes <libfccp/csv.h>: put it in a libfccp/ folder"; break; }
  done
  return 1
}
probe_mpi() {  # RHEL's openmpi installs off PATH, behind an environment module
  command -v "$1" >/dev/null 2>&1 && return 0
  [ -x "/usr/lib64/openmpi/bin/$1" ] && note="installed in /usr/lib64/openmpi/bin: module load mpi/openmpi-$(uname -m)"
  return 1
}
probe_cuda_headers() {  # as cmake/ParbenchOptions.cmake finds them for PARBENCH_CUDA=EMULATED
  local d
  for d in ${CUDA_HOME:+"$CUDA_HOME/include"} "${include_dirs[@]}" /usr/local/cuda/include; do
    [ -f "$d/cuda_runtime_api.h" ] && [ -f "$d/cublas_v2.h" ] && return 0
  done
  return 1
}
probe_nvcc() { command -v nvcc >/dev/null 2>&1 || [ -x "${CUDA_HOME:-/nonexistent}/bin/nvcc" ] || [ -x /usr/local/cuda/bin/nvcc ]; }
probe_fuzzer() {  # clang's libFuzzer and ASan runtimes (scripts/fuzz.sh links both), in either runtime layout
  command -v clang++ >/dev/null 2>&1 || return 1
  local dir lib
  dir=$(clang++ -print-runtime-dir 2>/dev/null) || return 1
  for lib in fuzzer asan; do
    [ -f "$dir/libclang_rt.$lib-$(uname -m).a" ] || [ -f "$dir/libclang_rt.$lib.a" ] || return 1
  done
}
probe_lizard() {  # where scripts/check_code_size.py looks
  python3 -c 'import lizard' 2>/dev/null || lizard --version >/dev/null 2>&1 || [ -x "$HOME/.local/bin/lizard" ] ||
    [ -x "$HOME/.local/share/pipx/venvs/lizard/bin/lizard" ]
}
probe_term() {
  case $1 in
    cmd:mpirun|cmd:mpicc) probe_mpi "${1#cmd:}" ;;
    cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
    hdr:*) have_header "${1#hdr:}" ;;
    lib:*) have_lib "${1#lib:}" ;;
    static:*) have_lib "${1#static:}" a || { note=${note:-"lib${1#static:}.a (the static library) not found"}; return 1; } ;;
    cmake) probe_cmake ;;
    cxx20) [ -n "$cxx" ] || { note="none of ${CXX:-c++ g++ clang++} compiles the C++20 the build needs (GCC 12 or Clang 14 with libstdc++ 12)"; return 1; } ;;
    fccp) probe_fccp ;;
    cuda-headers) probe_cuda_headers ;;
    nvcc) probe_nvcc ;;
    fuzzer) probe_fuzzer ;;
    lizard) probe_lizard ;;
    *) echo "setup: unknown probe $1" >&2; exit 2 ;;
  esac
}

# --- the table, read into columns
ids=() probes=() debs=() ubus=() rhels=() profs=() purposes=()
while IFS='|' read -r id probe deb ubu rhel prof purpose; do
  for f in id probe deb ubu rhel prof purpose; do read -r "${f?}" <<<"${!f}"; done  # trims the padding
  if [ -z "$id" ] || [ "${id#\#}" != "$id" ]; then continue; fi
  ids+=("$id") probes+=("$probe") debs+=("$deb") ubus+=("$ubu") rhels+=("$rhel") profs+=("$prof") purposes+=("$purpose")
done <<<"$needs_table"

need_kind() {  # row -> req, opt or nothing for this profile
  local w
  for w in ${profs[$1]}; do
    [ "$w" = "$profile" ] && { echo req; return; }
    [ "$w" = "$profile?" ] && { echo opt; return; }
  done
  return 0
}
missing_req=() missing_opt=()
declare -A notes=()
probe_all() {
  missing_req=() missing_opt=() notes=()
  find_cxx || true
  search_dirs
  local i kind term ok
  for i in "${!ids[@]}"; do
    kind=$(need_kind "$i")
    [ -n "$kind" ] || continue
    ok=1 note=""
    if [[ ",${PARBENCH_SETUP_PRETEND_MISSING:-}," == *",${ids[$i]},"* ]]; then
      ok=0
    else
      for term in ${probes[$i]}; do probe_term "$term" || { ok=0; break; }; done
    fi
    [ "$ok" -eq 1 ] && continue
    notes[$i]=$note
    if [ "$kind" = req ]; then missing_req+=("$i"); else missing_opt+=("$i"); fi
  done
}

# --- package names
clang_rt() {  # FAMILY: the package holding clang's runtime (libFuzzer, the sanitizers) for the clang here
  local major
  major=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
  if [ "$1" = ubuntu ]; then  # Ubuntu 22.04 still ships it in libclang-common-N-dev
    if [ "$os_family" != ubuntu ]; then echo "libclang-common-14-dev (22.04), libclang-rt-18-dev (24.04)"; return; fi
    [ -n "$major" ] || { [ "${os_version%%.*}" -ge 24 ] 2>/dev/null && major=18 || major=14; }
    if [ "${os_version%%.*}" -le 22 ] 2>/dev/null; then echo "libclang-common-$major-dev"; else echo "libclang-rt-$major-dev"; fi
  else
    [ -n "$major" ] || { [ "$os_family" = debian ] && [ "${os_version%%.*}" = 13 ] && major=19 || major=14; }
    echo "libclang-rt-$major-dev"
  fi
}
pkgs_of() {  # ROW FAMILY -> the names as the table says, "-" for none
  local p
  case $2 in
    debian) p=${debs[$1]} ;;
    ubuntu) p=${ubus[$1]}; [ "$p" = "=" ] && p=${debs[$1]} ;;
    *) p=${rhels[$1]} ;;
  esac
  [ "$p" = "{clang-rt}" ] && p=$(clang_rt "$2")
  echo "$p"
}
shown() { local p=$1; [ "$p" = - ] && p=none; p=${p//@epel/ (EPEL)}; echo "${p//@crb/ (CRB)}"; }
report_row() {
  local i=$1 deb ubu rhel where
  deb=$(pkgs_of "$i" debian) ubu=$(pkgs_of "$i" ubuntu) rhel=$(pkgs_of "$i" rhel)
  if [ "$deb" = "pip:lizard" ]; then where="PyPI: lizard"
  elif [ "$deb" = "$ubu" ]; then where="Debian/Ubuntu: $(shown "$deb"); RHEL/Rocky (dnf): $(shown "$rhel")"
  else where="Debian: $(shown "$deb"); Ubuntu: $(shown "$ubu"); RHEL/Rocky (dnf): $(shown "$rhel")"
  fi
  printf '  %-17s %s\n' "${ids[$i]}" "${purposes[$i]}"
  printf '  %-17s %s\n' "" "$where"
  [ -z "${notes[$i]:-}" ] || printf '  %-17s %s\n' "" "${notes[$i]}"
  [ -z "${fallback[${ids[$i]}]:-}" ] || printf '  %-17s %s\n' "" "${fallback[${ids[$i]}]}"
}
nvcc_line="setup: no CUDA toolkit (nvcc) found: building without the cuda device (cpu and simt only)."
report() {
  local i
  if [ ${#missing_req[@]} -gt 0 ]; then
    echo "setup: missing, needed for --for $profile:"
    for i in "${missing_req[@]}"; do report_row "$i"; done
  fi
  local opt=()
  for i in "${missing_opt[@]}"; do [ "${ids[$i]}" = nvcc ] || opt+=("$i"); done
  if [ ${#opt[@]} -gt 0 ]; then
    echo "setup: missing, optional for --for $profile:"
    for i in "${opt[@]}"; do report_row "$i"; done
  fi
  for i in "${missing_opt[@]}"; do [ "${ids[$i]}" != nvcc ] || echo "$nvcc_line"; done
  return 0
}

installable() {  # whether a package of this system provides something required and missing
  local i
  [ "$os_family" != other ] || return 1
  for i in "${missing_req[@]}"; do [ "$(pkgs_of "$i" "$os_family")" = - ] || return 0; done
  return 1
}

# --- installing (only here are sudo, apt-get, dnf and pip called)
as_root() { if [ "$uid" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
install_lizard() {  # into the user's site; for the user behind sudo when run as `sudo scripts/setup.sh`
  local as=()
  [ "$uid" -ne 0 ] || [ -z "${SUDO_USER:-}" ] || [ "$SUDO_USER" = root ] || as=(sudo -u "$SUDO_USER" -H)
  echo "setup: installing lizard (PyPI)"
  if command -v pipx >/dev/null 2>&1; then
    "${as[@]}" pipx install --quiet lizard
  else  # a Debian python3 refuses --user installs unless told it may (PEP 668)
    "${as[@]}" python3 -m pip install --user --quiet --no-warn-script-location lizard 2>/dev/null ||
      "${as[@]}" python3 -m pip install --quiet --no-warn-script-location lizard 2>/dev/null ||
      "${as[@]}" python3 -m pip install --user --quiet --no-warn-script-location --break-system-packages lizard
  fi
}
install_missing() {  # called in an || list, where set -e is off: each step checks its own status
  local i p pkgs=() lizard=0 family=$os_family status=0
  for i in "${missing_req[@]}" "${missing_opt[@]}"; do
    for p in $(pkgs_of "$i" "$family"); do
      case $p in -) ;; pip:*) lizard=1 ;; *) [[ " ${pkgs[*]} " == *" $p "* ]] || pkgs+=("$p") ;; esac
    done
  done
  if [ "$lizard" -eq 1 ] && ! command -v pipx >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then
    pkgs+=(python3-pip)
  fi
  case $family in
    debian|ubuntu)
      command -v apt-get >/dev/null 2>&1 || { echo "setup: no apt-get on this $family system" >&2; return 1; }
      if [ ${#pkgs[@]} -gt 0 ]; then
        as_root apt-get update -qq || return 1
        local have=()  # names this archive lacks (a package in Debian only, say) are left to their fallback
        for p in "${pkgs[@]}"; do
          if apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then have+=("$p")
          else echo "setup: $p is not in this system's archive"; fi
        done
        if [ ${#have[@]} -gt 0 ]; then
          echo "setup: installing ${have[*]}"
          as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${have[@]}" >/dev/null ||
            return 1
        fi
      fi ;;
    rhel|fedora)
      command -v dnf >/dev/null 2>&1 || { echo "setup: no dnf on this $family system" >&2; return 1; }
      if [ ${#pkgs[@]} -gt 0 ]; then
        if [ "$family" = rhel ] && [[ "${pkgs[*]}" == *@* ]]; then  # EPEL, and CRB (PowerTools on 8) it builds on
          as_root dnf install -y -q epel-release || echo "setup: could not install epel-release; enable EPEL by hand"
          local crb=crb
          [ "${os_version%%.*}" != 8 ] || crb=powertools
          as_root dnf config-manager --set-enabled "$crb" || echo "setup: could not enable the $crb repository"
        fi
        local plain=()
        for p in "${pkgs[@]}"; do plain+=("${p%@*}"); done
        echo "setup: installing ${plain[*]}"
        as_root dnf install -y -q --setopt=strict=0 "${plain[@]}" || return 1
      fi ;;
    *)
      echo "setup: this system (${os_id:-unknown}) is neither Debian/Ubuntu nor RHEL/Rocky/Fedora: install what is"
      echo "  listed below by its own means and add its prefix to CMAKE_PREFIX_PATH; the header-only libraries"
      echo "  the build can fetch itself with -DPARBENCH_FETCH_DEPS=ON."
      status=1 ;;
  esac
  [ "$lizard" -eq 0 ] || install_lizard || return 1
  return $status
}

probe_all
if [ ${#missing_req[@]} -eq 0 ] && [ ${#missing_opt[@]} -eq 0 ]; then
  echo "setup: all present"
  exit 0
fi
if [ "$mode" = auto ]; then
  if [ "$uid" -eq 0 ] || [ "${PARBENCH_INSTALL:-0}" = 1 ]; then mode=install; else mode=check; fi
fi
if [ "$mode" = check ]; then
  report
  [ ${#missing_req[@]} -gt 0 ] || exit 0
  if installable; then
    echo "setup: to install them: ${hint:-scripts/setup.sh --install --for $profile}"
  fi
  exit 1
fi
install_status=0
if [ "$os_family" = other ]; then
  install_missing || true
  probe_all
  report
  [ ${#missing_req[@]} -eq 0 ] || exit 1
  exit 0
fi
install_missing || { install_status=1; echo "setup: installing did not succeed (see the messages above)"; }
probe_all
if [ ${#missing_req[@]} -gt 0 ]; then
  echo "setup: still missing after installing what this system's packages have:"
  report
  exit 1
fi
report  # the optional ones left, if any
exit $install_status
