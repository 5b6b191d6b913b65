#!/usr/bin/env bash
# The build's libraries for a GPU machine whose image has CUDA, CMake and a compiler but not the libraries the build
# finds with find_package (GoogleTest, Google Benchmark, CLI11, nlohmann-json, Boost.Context) or the CSV parser's
# header: their Debian packages, downloaded here and unpacked into one folder (git-ignored, about 12 MB) to carry
# there. Debian 12's binaries need glibc 2.36, older than such images hold, so they run there. parbench-plot (all of
# Boost) is left out there: scripts/gpu_session.sh configures with -DPARBENCH_PLOTS=OFF.
#   scripts/gpu_deps.sh [DIR]      (default .devdeps)
# scripts/gpu_session.sh finds DIR=.devdeps by itself (CMAKE_PREFIX_PATH and LD_LIBRARY_PATH); for a build by hand:
#   export CMAKE_PREFIX_PATH=$PWD/.devdeps/usr LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.devdeps}
packages=(libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libcli11-dev nlohmann-json3-dev libfccp-dev)
command -v apt-get >/dev/null && command -v dpkg >/dev/null ||
  { echo "gpu_deps.sh: needs apt-get and dpkg (a Debian or Ubuntu machine)" >&2; exit 2; }
debs=$(mktemp -d)
chmod a+rwx "$debs"  # apt-get downloads as its own user
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download "${packages[@]}") >/dev/null ||
  { echo "gpu_deps.sh: apt-get download failed (run apt-get update first): ${packages[*]}" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
for deb in "$debs"/*.deb; do dpkg -x "$deb" "$dir"; done

# Boost: the simt device's fast fiber switch needs Boost.Context (one header and its static library), so of Boost's
# 160 MB of headers only those that header reaches (g++ -M) go, with the CMake package files that find them.
context=$(apt-cache depends libboost-context-dev | awk '/Depends:/ { print $2; exit }')
headers=$(apt-cache depends "$context" | awk '$2 ~ /^libboost[0-9.]+-dev$/ { print $2; exit }')
[ -n "$context" ] && [ -n "$headers" ] || { echo "gpu_deps.sh: Boost.Context's Debian packages not found" >&2; exit 1; }
(cd "$debs" && apt-get download "$context" "$headers") >/dev/null
boost=$debs/boost
for deb in "$debs/${context}"_*.deb "$debs/${headers}"_*.deb; do dpkg -x "$deb" "$boost"; done
arch_lib=usr/lib/x86_64-linux-gnu
mkdir -p "$dir/$arch_lib/cmake"
cp "$boost/$arch_lib/libboost_context.a" "$dir/$arch_lib/"
cp -r "$boost/$arch_lib"/cmake/{Boost-*,BoostDetectToolset-*,boost_context-*,boost_headers-*} "$dir/$arch_lib/cmake/"
rm -f "$dir/$arch_lib"/cmake/boost_context-*/libboost_context-variant-shared.cmake  # static only (simt links it so)
printf '#include <boost/context/detail/fcontext.hpp>\n#include <boost/version.hpp>\n' |
  g++ -std=c++20 -M -I"$boost/usr/include" -x c++ - | tr ' \\' '\n\n' | sed -n "s|^$boost/usr/include/||p" |
  while read -r h; do mkdir -p "$dir/usr/include/$(dirname "$h")"; cp "$boost/usr/include/$h" "$dir/usr/include/$h"; done

# Only what a build reads: headers, libraries and CMake's package files (the packages' documentation left out).
rm -rf "$dir/usr/share/doc" "$dir/usr/share/lintian" "$dir/usr/src"
echo "gpu_deps.sh: ${packages[*]} unpacked into $dir ($(du -sh "$dir" | cut -f1))"
