#!/usr/bin/env bash
# ptxas_report.sh: per-kernel registers, shared memory, stack and spill bytes of every kernels/*.cu as
# ptxas reports them for one architecture (no GPU needed), written as CSV; with --check BASELINE it
# fails when a kernel spills or uses a local-memory stack beyond what the baseline records.
#
#   scripts/ptxas_report.sh [--arch sm_90] [--out FILE.csv] [--check kernels/ptxas_baseline.csv]
#                           [--nvcc PATH] [--jobs N]
# Exit: 0 fine, 1 check failed or nvcc failed, 2 usage error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
arch=sm_90
out=""
check=""
nvcc="${NVCC:-}"
jobs=2
usage() { echo "usage: $0 [--arch sm_XX] [--out FILE.csv] [--check BASELINE.csv] [--nvcc PATH] [--jobs N]" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch) arch="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --check) check="${2:?}"; shift 2 ;;
    --nvcc) nvcc="${2:?}"; shift 2 ;;
    --jobs) jobs="${2:?}"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "error: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$arch" =~ ^sm_[0-9]+a?$ ]] || { echo "error: --arch '$arch' is not of the form sm_90" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "error: --jobs '$jobs' is not a positive integer" >&2; exit 2; }
if [[ -z "$nvcc" ]]; then nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"; fi
[[ -x "$nvcc" ]] || { echo "error: nvcc not found (tried '$nvcc'); pass --nvcc PATH" >&2; exit 2; }
if [[ -n "$check" && ! -r "$check" ]]; then echo "error: baseline '$check' is not readable" >&2; exit 2; fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# One nvcc per source, in parallel; each writes its ptxas log. -cubin: the device code alone (ptxas's report is
# the same; the host compile would only cost time).
compile() {
  local src="$1" log="$tmp/$(basename "$1").log"
  if ! "$nvcc" -std=c++20 -arch="$arch" -I"$root" -DPARBENCH_HAVE_CUDA=1 --expt-relaxed-constexpr \
       --resource-usage -cubin "$src" -o /dev/null >"$log" 2>&1; then
    echo "error: nvcc failed on $src:" >&2
    cat "$log" >&2
    return 1
  fi
}
export -f compile
export nvcc arch root tmp
ls "$root"/kernels/*.cu | xargs -P "$jobs" -I{} bash -c 'compile "$@"' _ {}

# ptxas prints, per entry function: "Compiling entry function 'NAME' for 'sm_90'", then
# "N bytes stack frame, N bytes spill stores, N bytes spill loads", then
# "Used N registers, used N barriers[, N bytes smem][, ...]".
report="$tmp/report.csv"
echo "file,kernel,registers,smem_bytes,stack_bytes,spill_store_bytes,spill_load_bytes,name" >"$report"
for log in "$tmp"/*.log; do
  file="$(basename "$log" .log)"
  awk -v file="$file" '
    /Compiling entry function/ { match($0, /function .[^'"'"']*/); k = substr($0, RSTART + 10, RLENGTH - 10); next }
    /bytes stack frame/ && k != "" { stack = $1; st = $5; ld = $9; next }
    /Used [0-9]+ registers/ && k != "" {
      regs = 0; smem = 0
      for (i = 1; i <= NF; ++i) { if ($(i+1) ~ /^registers/) regs = $i; if ($(i+1) == "bytes" && $(i+2) ~ /^smem/) smem = $i }
      print file "," k "," regs "," smem "," stack "," st "," ld; k = ""
    }' "$log" | sort
done | while IFS=, read -r f k regs smem stack st ld; do
  # The demangled name has commas: quoted, and last so the numeric columns stay easy to cut.
  name="$(echo "$k" | c++filt 2>/dev/null | sed 's/parbench::cuda_kernels:://g; s/"/""/g')"
  echo "$f,$k,$regs,$smem,$stack,$st,$ld,\"$name\""
done >>"$report"

kernels=$(($(wc -l <"$report") - 1))
[[ $kernels -gt 0 ]] || { echo "error: ptxas reported no kernels" >&2; exit 1; }
if [[ -n "$out" ]]; then cp "$report" "$out"; else cat "$report"; fi
echo "ptxas_report: $kernels kernels for $arch" >&2

if [[ -n "$check" ]]; then
  # A kernel fails when its stack or spill bytes exceed the baseline's (a kernel new to the baseline
  # counts as 0 there). Registers and shared memory are reported, not enforced.
  awk -F, '
    FNR == 1 { next }
    NR == FNR { stack[$2] = $5; st[$2] = $6; ld[$2] = $7; next }
    {
      bs = ($2 in stack) ? stack[$2] : 0; bst = ($2 in st) ? st[$2] : 0; bld = ($2 in ld) ? ld[$2] : 0
      if ($5 + 0 > bs + 0 || $6 + 0 > bst + 0 || $7 + 0 > bld + 0) {
        printf "FAIL %s %s: stack %s spill stores %s spill loads %s (baseline %s %s %s)\n", $1, $2, $5, $6, $7, bs, bst, bld
        bad++
      }
    }
    END { exit bad > 0 }' "$check" "$report" >&2 || { echo "ptxas_report: check against $check FAILED" >&2; exit 1; }
  echo "ptxas_report: no new stack or spills against $check" >&2
fi
