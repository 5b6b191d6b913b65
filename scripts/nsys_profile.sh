#!/usr/bin/env bash
# Profiles a parbench run with Nsight Systems: NVTX, CUDA, MPI and OS-runtime tracing, the capture limited to
# the steps bench_train brackets with cudaProfilerStart/Stop (--profile-steps A:B), then the NVTX summary.
#   scripts/nsys_profile.sh [--out NAME] [--steps A:B] [--mpi N] PROGRAM [ARGS...]
# Example: scripts/nsys_profile.sh --steps 2:4 bench_train --device cuda --scheme ddp --ranks 1
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=results/profile steps="" mpi=0
usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?}; shift 2 ;;
    --steps) steps=${2:?}; shift 2 ;;
    --mpi) mpi=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    --*) echo "nsys_profile.sh: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
if ! command -v nsys >/dev/null 2>&1; then
  echo "nsys_profile.sh: Nsight Systems (nsys) is not installed here, so nothing was profiled." >&2
  echo "  Install it from NVIDIA's CUDA repositories (package nsight-systems) on a machine with a GPU, or record" >&2
  echo "  a trace without it: add --trace trace.json to the program and open the file in https://ui.perfetto.dev" >&2
  exit 1
fi
prog=$1; shift
[ -x "$prog" ] || prog="$here/build/bin/$prog"
args=("$@")
capture=()
if [ -n "$steps" ]; then
  args+=(--profile-steps "$steps")
  capture=(--capture-range=cudaProfilerApi --capture-range-end=stop)
fi
mkdir -p "$(dirname "$out")"
launch=()
if [ "$mpi" -gt 0 ]; then
  launch=(mpirun --oversubscribe -np "$mpi")
  [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
fi
nsys profile --trace=nvtx,cuda,mpi,osrt --force-overwrite=true "${capture[@]}" -o "$out" \
  "${launch[@]}" "$prog" "${args[@]}"
nsys stats --report nvtx_sum --format table "$out.nsys-rep"
