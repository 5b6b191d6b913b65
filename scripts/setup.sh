#!/usr/bin/env bash
# Installs what parbench's build and tests need from Debian (and lizard from PyPI), skipping what is present.
# Quiet when nothing is missing; says so when the CUDA toolkit is absent (the build continues without it).
set -euo pipefail

packages=(cmake ninja-build g++ openmpi-bin libopenmpi-dev libbenchmark-dev libgtest-dev libgmock-dev
          libcli11-dev nlohmann-json3-dev libfccp-dev libgnuplot-iostream-dev libboost-iostreams-dev
          libboost-filesystem-dev libboost-system-dev libboost-context-dev gnuplot-nox clang libclang-rt-14-dev
          python3-pip)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# lizard (PyPI) measures functions for the code-size check (scripts/check_code_size.py), which finds pip's and
# pipx's copies alike: installed only when neither is there.
if ! python3 -c 'import lizard' 2>/dev/null && ! lizard --version >/dev/null 2>&1 &&
   [ ! -x "$HOME/.local/bin/lizard" ]; then
  echo "setup: installing lizard (PyPI)"
  if command -v pipx >/dev/null 2>&1; then
    pipx install --quiet lizard
  else  # a Debian python3 refuses --user installs unless told it may (PEP 668)
    python3 -m pip install --user --quiet lizard 2>/dev/null || python3 -m pip install --quiet lizard 2>/dev/null ||
      python3 -m pip install --user --quiet --break-system-packages lizard
  fi
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: no CUDA toolkit (nvcc) found: building without the cuda device (cpu and simt only)."
fi
exit 0
