#!/usr/bin/env bash
# check_cuda12.sh: compiles every .cu of the project with a CUDA 12 nvcc for sm_80 and sm_90: the cuda objects only
# (nothing linked, nothing run, no GPU needed), so that a CUDA 12 toolkit keeps building the kernels the default
# build compiles with CUDA 13. Ends with the nvcc version, how many .cu compiled and the time; exits 1 when one fails
# to compile, 2 when the toolkit cannot be had or the configure fails.
#
#   scripts/check_cuda12.sh [--version 12.X] [--nccl 2.Y] [--toolkit DIR] [--build-dir DIR] [--jobs N] [--full-opt]
#
# The toolkit: PyPI's CUDA 12 nvcc wheels (nvidia-cuda-nvcc-cu12) hold ptxas, libdevice and the crt/ headers, not
# nvcc itself, cudafe++ or cicc; those come from Debian's nvidia-cuda-toolkit package (non-free, trixie; fetched with
# apt-get download under an apt state of this script's own, nothing installed), the headers from that release's
# PyPI wheels (nvidia-cuda-nvcc-cu12 for crt/, nvidia-cuda-runtime-cu12, nvidia-cuda-cccl-cu12) and NCCL's, device
# API included, from nvidia-nccl-cu12. Laid out once as a toolkit root in ${PARBENCH_CACHE:-~/.cache/parbench}/cuda12
# and reused from there. --version picks the 12.x release (default 12.4: the newest CUDA 12 Debian packages);
# --toolkit DIR takes an installed CUDA 12 toolkit instead (any 12.x), with NCCL's headers from DIR/include when they
# have the device API, else from the wheel.
# Nothing is linked, so libcublas, libcublasLt and libnccl, which the configure only names, are stub libraries.
#
# Device code is compiled with -Xcicc -O1 (cicc's inlining and unrolling at -O3 take three quarters of the time;
# what a CUDA 12 toolkit may reject, the language, headers, intrinsics and PTX, is checked the same, and ptxas
# still runs at its default -O3); --full-opt compiles with the build's own flags. The default build compiles the
# same sources with full optimisation under CUDA 13.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

version=12.4
nccl_version=2.28
toolkit=""
build="build-cuda12"
jobs=$(nproc)
full_opt=0
usage() {
  echo "usage: $0 [--version 12.X] [--nccl 2.Y] [--toolkit DIR] [--build-dir DIR] [--jobs N] [--full-opt]" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --version) version="${2:?--version needs 12.X}"; shift 2 ;;
    --nccl) nccl_version="${2:?--nccl needs 2.Y}"; shift 2 ;;
    --toolkit) toolkit="${2:?--toolkit needs a folder}"; shift 2 ;;
    --build-dir) build="${2:?--build-dir needs a folder}"; shift 2 ;;
    --jobs|-j) jobs="${2:?--jobs needs a number}"; shift 2 ;;
    --full-opt) full_opt=1; shift ;;
    -h|--help) usage ;;
    *) echo "check_cuda12: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$version" =~ ^12\.[0-9]+$ ]] || { echo "check_cuda12: --version '$version' is not of the form 12.X" >&2; exit 2; }
[[ "$nccl_version" =~ ^2\.[0-9]+(\.[0-9]+)?$ ]] ||
  { echo "check_cuda12: --nccl '$nccl_version' is not of the form 2.Y" >&2; exit 2; }
cache="${PARBENCH_CACHE:-$HOME/.cache/parbench}/cuda12"
say() { echo "check_cuda12: $*" >&2; }
die() { say "$*"; exit 2; }

# One wheel into a folder (no dependencies, no pip cache: the wheel is dropped once unpacked).
fetch_wheel() {  # SPEC DEST [PATH-PREFIX...]: unpacks the wheel's files under the prefixes (all when none)
  local spec=$1 dest=$2 wheels
  shift 2
  wheels=$(mktemp -d "$cache/wheel.XXXXXX")
  python3 -m pip download --quiet --no-deps --no-cache-dir --only-binary=:all: -d "$wheels" "$spec" >&2 ||
    { rm -rf "$wheels"; return 1; }
  python3 - "$wheels"/*.whl "$dest" "$@" <<'EOF' || { rm -rf "$wheels"; return 1; }
import sys, zipfile
wheel, dest, prefixes = sys.argv[1], sys.argv[2], tuple(sys.argv[3:])
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if not prefixes or name.startswith(prefixes):
            z.extract(name, dest)
EOF
  rm -rf "$wheels"
}

# Debian's nvidia-cuda-toolkit of CUDA $version: nvcc, cudafe++, cicc, ptxas, fatbinary, nvlink and libdevice.
fetch_debian_compiler() {  # DEST: prints the package's CUDA version (12.4.131)
  local dest=$1 apt_dir="$cache/apt" line deb_version upstream debs
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||  # both or the message
    die "fetching CUDA $version's nvcc needs apt-get and dpkg-deb (Debian, Ubuntu); or pass --toolkit DIR"
  [[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] ||
    die "Debian's archive keyring is missing (apt-get install debian-archive-keyring); or pass --toolkit DIR"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  # trixie first: a stable release's package does not change under CI; sid for a newer 12.x once Debian has one.
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s non-free\n' \
    trixie sid >"$apt_dir/sources.list"
  local apt=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State="$apt_dir" -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status=/dev/null
             -o Dir::Cache="$apt_dir/cache" -o Acquire::Languages=none -o APT::Architecture=amd64
             -o Debug::NoLocking=1)
  [[ $EUID -ne 0 ]] || apt+=(-o APT::Sandbox::User=root)  # the cache may be in a home apt's own user cannot enter
  apt-get "${apt[@]}" -qq update >&2 || die "apt-get update of Debian's non-free lists failed"
  # madison: "nvidia-cuda-toolkit | 12.4.131~12.4.1-2 | http://deb.debian.org/debian trixie/non-free amd64 Packages"
  line=$(apt-cache "${apt[@]}" madison nvidia-cuda-toolkit |
    awk -F'|' -v v="$version." '{ gsub(/ /, "", $2) } index($2, v) == 1 { print ($3 ~ / trixie\//) ? 0 : 1, $2 }' |
    sort -s -k1,1n | head -1)
  deb_version=${line#* }
  if [[ -z "$line" ]]; then
    die "Debian packages no nvcc of CUDA $version (it has: $(apt-cache "${apt[@]}" madison nvidia-cuda-toolkit |
      awk -F'|' '{ gsub(/ /, "", $2); sub(/~.*/, "", $2); print $2 }' | sort -u | paste -sd ' ' -)); pass --toolkit DIR"
  fi
  upstream=${deb_version%%~*}
  debs=$(mktemp -d "$cache/deb.XXXXXX")
  (cd "$debs" && apt-get "${apt[@]}" -qq download "nvidia-cuda-toolkit=$deb_version") >&2 ||
    { rm -rf "$debs"; die "apt-get download nvidia-cuda-toolkit=$deb_version failed"; }
  mkdir -p "$debs/x"
  dpkg-deb --fsys-tarfile "$debs"/*.deb | tar -x -C "$debs/x" ./usr/bin ./usr/lib/nvidia-cuda-toolkit/bin \
    ./usr/lib/nvidia-cuda-toolkit/libdevice
  mkdir -p "$dest/bin/crt" "$dest/nvvm/bin" "$dest/nvvm/libdevice"
  local tool
  for tool in cudafe++ ptxas fatbinary nvlink bin2c; do mv "$debs/x/usr/bin/$tool" "$dest/bin/"; done
  mv "$debs/x/usr/lib/nvidia-cuda-toolkit/bin/nvcc" "$dest/bin/"
  mv "$debs/x/usr/lib/nvidia-cuda-toolkit/bin/crt/"*.stub "$dest/bin/crt/"
  mv "$debs/x/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$dest/nvvm/bin/"
  mv "$debs/x/usr/lib/nvidia-cuda-toolkit/libdevice/"* "$dest/nvvm/libdevice/"
  rm -rf "$debs"
  echo "$upstream"
}

# The toolkit root nvcc and CMake's FindCUDAToolkit accept: bin/ (nvcc reads its nvcc.profile there), nvvm/,
# include/ (the wheels' headers, linked in) and lib64/.
install_toolkit() {  # DEST
  local dest=$1 tmp upstream part entry
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/install.XXXXXX")
  chmod 755 "$tmp"  # a cache shared through PARBENCH_CACHE stays readable to others
  say "fetching CUDA $version (Debian's nvidia-cuda-toolkit, PyPI's headers) into $dest"
  upstream=$(fetch_debian_compiler "$tmp/root") || { rm -rf "$tmp"; exit 2; }
  # crt/ must be the compiler's own release; runtime and CCCL headers that release's newest.
  fetch_wheel "nvidia-cuda-nvcc-cu12==$upstream" "$tmp/pkgs" nvidia/cuda_nvcc/include/ ||
    fetch_wheel "nvidia-cuda-nvcc-cu12==$version.*" "$tmp/pkgs" nvidia/cuda_nvcc/include/ ||
    { rm -rf "$tmp"; die "could not fetch nvidia-cuda-nvcc-cu12 $upstream from PyPI"; }
  for part in runtime cccl; do
    fetch_wheel "nvidia-cuda-$part-cu12==$version.*" "$tmp/pkgs" nvidia/cuda_$part/ ||
      { rm -rf "$tmp"; die "could not fetch nvidia-cuda-$part-cu12==$version.* from PyPI"; }
  done
  mkdir -p "$tmp/root/include" "$tmp/root/lib64"
  for part in cuda_runtime cuda_nvcc cuda_cccl; do
    for entry in "$tmp/pkgs/nvidia/$part/include/"*; do
      [[ "${entry##*/}" != __init__.py ]] || continue
      ln -s "../../pkgs/nvidia/$part/include/${entry##*/}" "$tmp/root/include/" ||
        { rm -rf "$tmp"; die "two wheels hold include/${entry##*/}"; }
    done
  done
  ln -s "../../pkgs/nvidia/cuda_runtime/lib/libcudart.so.12" "$tmp/root/lib64/libcudart.so.12"
  ln -s libcudart.so.12 "$tmp/root/lib64/libcudart.so"
  for entry in cublas cublasLt; do cc -shared -o "$tmp/root/lib64/lib$entry.so" -x c /dev/null; done
  cat >"$tmp/root/bin/nvcc.profile" <<'EOF'
TOP = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64"
EOF
  "$tmp/root/bin/nvcc" --version >/dev/null || { rm -rf "$tmp"; die "the fetched nvcc does not run"; }
  rm -rf "$dest"
  mv -T "$tmp" "$dest" 2>/dev/null || rm -rf "$tmp"  # another run may have put its copy there first
}

# NCCL's headers (nccl.h, nccl_device.h) and a stub libnccl: the 400 MB library is not needed to compile.
install_nccl() {  # DEST
  local dest=$1 tmp
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/install.XXXXXX")
  chmod 755 "$tmp"
  say "fetching NCCL $nccl_version's headers (nvidia-nccl-cu12) into $dest"
  fetch_wheel "nvidia-nccl-cu12==$nccl_version.*" "$tmp/x" nvidia/nccl/include/ ||
    { rm -rf "$tmp"; die "could not fetch nvidia-nccl-cu12==$nccl_version.* from PyPI"; }
  mv "$tmp/x/nvidia/nccl/include" "$tmp/include"
  rm -rf "$tmp/x"
  mkdir -p "$tmp/lib"
  cc -shared -o "$tmp/lib/libnccl.so" -x c /dev/null
  rm -rf "$dest"
  mv -T "$tmp" "$dest" 2>/dev/null || rm -rf "$tmp"
}

if [[ -n "$toolkit" ]]; then
  root=$(cd "$toolkit" && pwd)
  [[ -x "$root/bin/nvcc" ]] || die "--toolkit $toolkit has no bin/nvcc"
else
  [[ -x "$cache/$version/root/bin/nvcc" ]] || install_toolkit "$cache/$version"
  root="$cache/$version/root"
fi
nvcc_version=$("$root/bin/nvcc" --version | sed -n 's/.*, V\([0-9.]*\)$/\1/p')
[[ "$nvcc_version" == 12.* ]] || die "$root/bin/nvcc is CUDA ${nvcc_version:-of unknown version}, not 12.x"

if [[ -n "$toolkit" && -r "$root/include/nccl.h" && -r "$root/include/nccl_device.h" ]]; then
  nccl_include="$root/include"
  nccl_library=$(find "$root/lib64" "$root/lib" -maxdepth 1 -name 'libnccl.so*' 2>/dev/null | head -1)
else
  nccl_include=""
  nccl_library=""
fi
if [[ -z "$nccl_include" || -z "$nccl_library" ]]; then
  [[ -r "$cache/nccl-$nccl_version/include/nccl.h" ]] || install_nccl "$cache/nccl-$nccl_version"
  nccl_include="$cache/nccl-$nccl_version/include"
  nccl_library="$cache/nccl-$nccl_version/lib/libnccl.so"
fi
nccl_found=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH) / { v = v (v == "" ? "" : ".") $3 } END { print v }' \
  "$nccl_include/nccl.h")

# A build folder configured with another nvcc is configured anew (CMake keeps its first CUDA compiler).
if [[ -f "$build/CMakeCache.txt" ]] &&
   ! grep -qxF "CMAKE_CUDA_COMPILER:FILEPATH=$root/bin/nvcc" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
cuda_flags="-Xcicc -O1"
host_flags=-DNDEBUG  # host code unoptimised: the check compiles it, nothing runs it
if [[ $full_opt -eq 1 ]]; then
  cuda_flags=""
  host_flags="-O2 -g -DNDEBUG"
fi
configure_start=$SECONDS
mkdir -p "$(dirname "$build")"
# The environment's CUDA_HOME, NCCL_HOME and search paths (LIBRARY_PATH, CPATH) could bring in another toolkit.
clean_env=(env -u CUDA_HOME -u NCCL_HOME -u CUDACXX -u CUDAHOSTCXX -u LIBRARY_PATH -u CPATH -u C_INCLUDE_PATH
           -u CPLUS_INCLUDE_PATH)
# CMake's "Detecting CUDA compiler ABI info" fails (it links a program; the wheels have no libcudart_static.a):
# harmless here, where nothing is linked.
"${clean_env[@]}" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CUDA_COMPILER="$root/bin/nvcc" -DCUDAToolkit_ROOT="$root" \
  -DCMAKE_CUDA_ARCHITECTURES="80;90" \
  -DCMAKE_CUDA_FLAGS="$cuda_flags" -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="$host_flags" \
  -DPARBENCH_CUDA=ON -DPARBENCH_MPI=OFF -DPARBENCH_NCCL=ON -DPARBENCH_PLOTS=OFF \
  -DNCCL_INCLUDE_DIR="$nccl_include" -DNCCL_LIBRARY="$nccl_library" >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; die "configure failed (log: $build.configure.log)"; }
configure_seconds=$((SECONDS - configure_start))

# Every nvcc compile of the configure (compile_commands.json); the repository's .cu files (tracked or new) that
# have none are reported as left out.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files --cached --others --exclude-standard '*.cu')
else
  mapfile -t sources < <(find . -name '*.cu' -not -path './build*' -printf '%P\n' | sort)
fi
mapfile -t compiles < <(python3 - "$build/compile_commands.json" "$PWD" <<'EOF'
import json, os, sys
for c in json.load(open(sys.argv[1])):
    if c["file"].endswith(".cu") and "nvcc" in c["command"].split()[0]:
        out = c.get("output") or c["command"].split(" -o ")[1].split()[0]
        print(os.path.relpath(c["file"], sys.argv[2]), out, sep="\t")
EOF
)
declare -A object_of=()
objects=()
for c in "${compiles[@]}"; do
  object_of[${c%%$'\t'*}]=${c#*$'\t'}
  objects+=("${c#*$'\t'}")
done
left_out=()
for s in "${sources[@]}"; do [[ -n "${object_of[$s]:-}" ]] || left_out+=("$s"); done
archs=$(python3 - "$build/compile_commands.json" <<'EOF'
import json, re, sys
sets = [set(re.findall(r"sm_[0-9]+a?", " ".join(re.findall(r"code=\S+", c["command"]))))
        for c in json.load(open(sys.argv[1])) if c["file"].endswith(".cu")]
print(" ".join(sorted(set.intersection(*sets)) if sets else []))
EOF
)
if [[ ${#left_out[@]} -gt 0 ]]; then
  say "left out by this configure: ${left_out[*]}"
  reasons=$(grep -o 'parbench: left out: .*' "$build.configure.log" || true)
  if [[ -z "$reasons" ]]; then
    say "the configure gives no reason for leaving them out: is a CMakeLists missing them?"
    exit 1
  fi
  while read -r r; do say "  $r"; done <<<"$reasons"
fi
[[ ${#objects[@]} -gt 0 ]] || { say "the configure compiles no .cu with $root/bin/nvcc"; exit 1; }

build_start=$SECONDS
status=0
"${clean_env[@]}" ninja -C "$build" -j "$jobs" -k 0 "${objects[@]}" >"$build/check_cuda12.log" 2>&1 || status=$?
build_seconds=$((SECONDS - build_start))
# A failed compile may leave an older object behind: ninja's FAILED lines count, not the files.
failed=$(grep -c '^FAILED: ' "$build/check_cuda12.log" || true)
missing=0
for o in "${objects[@]}"; do [[ -f "$build/$o" ]] || missing=$((missing + 1)); done
compiled=$((${#objects[@]} - failed))
[[ $missing -le $failed ]] || status=1
if [[ $status -ne 0 ]]; then
  grep -v '^\[[0-9]*/[0-9]*\] ' "$build/check_cuda12.log" >&2 || true
fi
left_words=""
[[ ${#left_out[@]} -eq 0 ]] || left_words=" (${#left_out[@]} left out)"
echo "check_cuda12: nvcc $nvcc_version, NCCL $nccl_found headers, $compiled of ${#objects[@]} .cu$left_words compiled" \
  "for $archs in $build_seconds s ($((SECONDS - start)) s with setup and a $configure_seconds s configure)"
[[ $status -eq 0 && $compiled -eq ${#objects[@]} ]] || exit 1
