#!/usr/bin/env bash
# Writes a system file for the predictor (bench_train --simulate --system FILE) from measurements of this machine:
# bench_kernels on the cpu device (matmul FLOP/s, elementwise bytes/s) and bench_allreduce over threads (alpha and
# beta fitted by bench_train --calibrate).
#   scripts/calibrate.sh [--bin DIR] [--out FILE] [--ranks 2,4]
# Default: build/bin, results/this-machine.json. Then: PARBENCH_THIS_MACHINE=FILE bench_train --simulate
# --system this-machine ..., or --system FILE directly.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin out=results/this-machine.json ranks=2,4
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --ranks) ranks=${2:?--ranks needs a list like 2,4}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "calibrate.sh: unknown option '$1'" >&2; usage ;;
  esac
done
[[ "$ranks" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "calibrate.sh: --ranks '$ranks' is not a list like 2,4" >&2; exit 2; }
for p in bench_kernels bench_allreduce bench_train; do
  [ -x "$bin/$p" ] || { echo "calibrate.sh: no $bin/$p (build first: scripts/build.sh)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

# Kernels: the median FLOP/s of the matmul rows per dtype, the median bytes/s of the elementwise rows (f32).
"$bin/bench_kernels" --device cpu --shape small --benchmark_format=csv > "$tmp/kernels.csv" 2>/dev/null
median_of() {  # median_of PATTERN COLUMN_NAME: over rows whose name matches PATTERN ("none" without rows)
  awk -F, -v pat="$1" -v col="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); if (h == col) c = i }; next }
    $1 ~ pat && $c != "" { print $c + 0 }' "$tmp/kernels.csv" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "none"; else print v[int((NR + 1) / 2)] }'
}
flops32=$(median_of '^"matmul.*/f32/' "FLOP/s")
flops16=$(median_of '^"matmul.*/bf16/' "FLOP/s")
bytes32=$(median_of '^"(gelu|bias_gelu|layernorm|residual|softmax|encoder|crossentropy)[a-z_]*/cpu/f32/' "bytes/s")
for v in "$flops32" "$flops16" "$bytes32"; do
  [ "$v" != none ] || { echo "calibrate.sh: bench_kernels printed no matmul or elementwise rows" >&2; exit 1; }
done

# Compute units: one matmul benchmark alone, then one copy per core at once; the copies' summed rate over the
# lone rate is how many ranks can compute together now (the core count on an idle machine, fewer when other jobs
# hold cores).
matmul_rate() {
  "$bin/bench_kernels" --device cpu --shape small --benchmark_filter='matmul_forward_fc/reference/cpu/f32' \
    --benchmark_min_time=0.3 --benchmark_format=csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); if (h == "FLOP/s") c = i }; next }
             { print $c + 0 }'
}
alone=$(matmul_rate)
cores=$(nproc)
for i in $(seq "$cores"); do matmul_rate > "$tmp/rate$i" & done
wait
units=$(cat "$tmp"/rate* | awk -v alone="$alone" '{ s += $1 } END { printf "%.2f", s / alone }')

# Allreduce over threads at each rank count: alpha and beta fitted per group; the ring's fits are averaged.
files=""
for n in ${ranks//,/ }; do
  "$bin/bench_allreduce" --device cpu --ranks "$n" --impl ring --sizes 4K:16M:x4 -n 10 -q --csv "$tmp/ar$n.csv"
  files="$files${files:+,}$tmp/ar$n.csv"
done
"$bin/bench_train" --calibrate "$files" --csv "$tmp/fit.csv"
read -r alpha_us gbps < <(awk -F, 'NR > 1 && $2 == "ring" { a += $5; g += $6; n++ } END { printf "%g %g\n", a / n, g / n }' "$tmp/fit.csv")

awk -v f32="$flops32" -v f16="$flops16" -v b="$bytes32" -v a="$alpha_us" -v g="$gbps" -v host="$(hostname)" -v units="$units" 'BEGIN {
  printf "{\n  \"name\": \"this-machine\",\n"
  printf "  \"source\": \"scripts/calibrate.sh on %s: bench_kernels --device cpu (medians of matmul FLOP/s and elementwise bytes/s), bench_allreduce ring over threads (alpha-beta fit)\",\n", host
  printf "  \"gpu\": {\"name\": \"cpu\", \"matrix_tflops_16\": %.6g, \"matrix_tflops_32\": %.6g, \"vector_tflops\": %.6g,\n", f16 / 1e12, f32 / 1e12, f32 / 1e12
  printf "          \"hbm_gbps\": %.6g, \"hbm_gb\": 8, \"matrix_efficiency\": [[0, 1]], \"vector_efficiency\": [[0, 1]],\n", b / 1e9
  printf "          \"hbm_efficiency\": [[0, 1]], \"compute_units\": %s},\n", units
  printf "  \"network\": [{\"name\": \"threads\", \"gpus\": 1024, \"gbps\": %.6g, \"efficiency\": 1, \"latency_us\": %.6g}]\n}\n", g, a
}' > "$tmp/system.json"
"$bin/bench_train" --simulate --gpus 1 --system "$tmp/system.json" --quiet  # the schema check
mv "$tmp/system.json" "$out"
echo "calibrate.sh: wrote $out (matmul $flops32 FLOP/s f32, elementwise $bytes32 B/s, allreduce link ${gbps} GB/s, alpha ${alpha_us} us, $units of $cores cores free for compute)"
