#!/usr/bin/env bash
# Writes a system file for the predictor (bench_train --simulate --system FILE) from measurements of this machine:
# bench_kernels on the cpu device at several shapes (matmul FLOP/s and elementwise bytes/s by op size, GeLU's and
# the AdamW update's own rates, an op's fixed cost) and bench_allreduce over threads (alpha, beta: bench_train --calibrate).
#   scripts/calibrate.sh [--bin DIR] [--out FILE] [--ranks 2,4] [--shapes 'B=1,T=32,C=64,NH=4,V=256;...']
#                        [--linears 256x64x192,...]
# --linears: linear layers (TOKENSxINxOUT) whose GEMMs are timed as they are, for a model's own shapes.
# Default: build/bin, results/this-machine.json. Then: PARBENCH_THIS_MACHINE=FILE bench_train --simulate
# --system this-machine ..., or --system FILE directly.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$here/build/bin out=results/this-machine.json ranks=2,4 linears=""
shapes='B=1,T=32,C=64,NH=4,V=256;B=2,T=64,C=64,NH=4,V=256;B=4,T=128,C=64,NH=4,V=256'
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --ranks) ranks=${2:?--ranks needs a list like 2,4}; shift 2 ;;
    --shapes) shapes=${2:?--shapes needs bench_kernels shapes separated by ;}; shift 2 ;;
    --linears) linears=${2:?--linears needs a list like 256x64x192,256x64x64}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "calibrate.sh: unknown option '$1'" >&2; usage ;;
  esac
done
[ -z "$linears" ] || [[ "$linears" =~ ^[0-9]+x[0-9]+x[0-9]+(,[0-9]+x[0-9]+x[0-9]+)*$ ]] ||
  { echo "calibrate.sh: --linears '$linears' is not a list like 256x64x192,256x64x64" >&2; exit 2; }
[[ "$ranks" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "calibrate.sh: --ranks '$ranks' is not a list like 2,4" >&2; exit 2; }
shape_form='B=[0-9]+,T=[0-9]+,C=[0-9]+,NH=[0-9]+,V=[0-9]+'
[[ "$shapes" =~ ^$shape_form(\;$shape_form)*$ ]] ||
  { echo "calibrate.sh: --shapes '$shapes' is not a list like B=1,T=32,C=64,NH=4,V=256;B=4,T=128,C=64,NH=4,V=256" >&2; exit 2; }
for p in bench_kernels bench_allreduce bench_train; do
  [ -x "$bin/$p" ] || { echo "calibrate.sh: no $bin/$p (build first: scripts/build.sh)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

# Kernels (f32) at each --shapes entry and at a shape doing almost no work (the fixed cost of an op): matmul and
# elementwise rates of a block's op mix, as efficiency curves by op size (scripts/calibrate_kernels.awk says how).
overhead_shape=B=1,T=1,C=4,NH=1,V=4
# The op names by what the fit takes them for: the op table's cost column (bench_kernels --list-ops).
"$bin/bench_kernels" --list-ops >"$tmp/ops.csv"
ops_with() {  # ops_with ROLE...: the table's rows of those cost roles, as name|name|...
  awk -F, -v roles=" $* " 'NR > 1 && $2 != "linear" && index(roles, " " $5 " ") { printf "%s%s", (n++ ? "|" : ""), $1 }' \
    "$tmp/ops.csv"
}
matmul_forwards=$(ops_with matrix_forward)
[ -n "$matmul_forwards" ] || { echo "calibrate.sh: bench_kernels --list-ops names no matrix_forward row" >&2; exit 1; }
f32_rows="^(($matmul_forwards)/reference|$(ops_with input_gradient weight_gradient elementwise gelu optimizer))/cpu/f32/"
# kernels_at FILTER BENCH_KERNELS_ARGS...: bench_kernels' CSV rows (header first); of three runs, each benchmark's row
# with the median real_time (one run moves by several percent on a VM).
kernels_at() {
  for run in 1 2 3; do
    "$bin/bench_kernels" --device cpu "${@:2}" --benchmark_filter="$1" --benchmark_format=csv 2>/dev/null
  done | awk -F, 'NR == 1 { print; header = $0; next }
    $0 == header { next }
    { if (!($1 in runs)) order[++names] = $1
      k = ++runs[$1]; row[$1, k] = $0; t[$1, k] = $3 + 0 }
    END {
      for (i = 1; i <= names; i++) {
        n = order[i]; c = runs[n]
        for (a = 1; a <= c; a++) at[a] = a
        for (a = 1; a <= c; a++) for (b = a + 1; b <= c; b++) if (t[n, at[b]] < t[n, at[a]]) { x = at[a]; at[a] = at[b]; at[b] = x }
        print row[n, at[int((c + 1) / 2)]]
      }
    }'
}
kernels_at "$f32_rows" --shape "$overhead_shape" > "$tmp/kernels.csv"
IFS=';' read -r -a shape_list <<< "$shapes"
for shape in "${shape_list[@]}"; do kernels_at "$f32_rows" --shape "$shape" | tail -n +2 >> "$tmp/kernels.csv"; done
# The forward and input-gradient matmuls at C = 16, 32 and 128 as well: the rates by k (16 to 512) that tensor
# parallelism's narrower linears and attention's short heads run at.
depth_shapes=""
for c in 16 32 128; do
  kernels_at "^(($matmul_forwards)/reference|$(ops_with input_gradient))/cpu/f32/" --shape "B=1,T=32,C=$c,NH=4,V=64" |
    tail -n +2 >> "$tmp/kernels.csv"
  depth_shapes="$depth_shapes B1_T32_C${c}_NH4_V64"
done
# --linears: each layer's three GEMMs as they are (the system file's measured linears).
linear_rows=$(awk -F, '$2 == "linear" { printf "%s%s", (n++ ? "|" : ""), $1 }' "$tmp/ops.csv")
[ -z "$linears" ] || kernels_at "^($linear_rows)/" --linear "$linears" --dtype f32 | tail -n +2 >> "$tmp/kernels.csv"
fit=$(awk -v overhead_shape="$(echo "$overhead_shape" | sed 's/=//g; s/,/_/g')" -v depth_shapes="$depth_shapes" \
      -f "$here/scripts/calibrate_kernels.awk" "$tmp/ops.csv" "$tmp/kernels.csv") ||
  { echo "calibrate.sh: bench_kernels rows could not be fitted" >&2; exit 1; }
eval "$fit"  # overhead_us peak_flops matrix_curve matrix_by_k peak_bytes hbm_curve gelu_bytes optimizer_bytes measured_linears
# bf16: the f32 peak scaled by the ratio of the forward matmul rows' summed rates at the middle shape.
middle=${shape_list[$(( ${#shape_list[@]} / 2 ))]}
bf16_ratio=$(kernels_at "^($matmul_forwards)/reference/cpu/(f32|bf16)/" --shape "$middle" | awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); if (h == "FLOP/s") c = i }; next }
  $1 ~ /\/f32\// { f += $c } $1 ~ /\/bf16\// { b += $c } END { if (f > 0 && b > 0) printf "%.6g", b / f; else print "none" }')
[ "$bf16_ratio" != none ] || { echo "calibrate.sh: bench_kernels printed no bf16 matmul rows" >&2; exit 1; }
flops32=$peak_flops bytes32=$peak_bytes
flops16=$(awk -v f="$flops32" -v r="$bf16_ratio" 'BEGIN { printf "%.6g", f * r }')

# Compute units: one matmul benchmark alone, then one copy per core at once; the copies' summed rate over the
# lone rate is how many ranks can compute together now (the core count on an idle machine, fewer when other jobs
# hold cores). The median of five such trials: one trial moves by several percent on a VM.
fc_forward=$(awk -F, 'NR > 1 && $5 == "matrix_forward" && $3 != "" { print $1; exit }' "$tmp/ops.csv")  # the fc's
matmul_rate() {
  "$bin/bench_kernels" --device cpu --shape small --benchmark_filter="^$fc_forward/reference/cpu/f32/" \
    --benchmark_min_time=0.3 --benchmark_format=csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); if (h == "FLOP/s") c = i }; next }
             { print $c + 0 }'
}
cores=$(nproc)
for trial in 1 2 3 4 5; do
  alone=$(matmul_rate)
  for i in $(seq "$cores"); do matmul_rate > "$tmp/rate$i" & done
  wait
  cat "$tmp"/rate* | awk -v alone="$alone" '{ s += $1 } END { printf "%.4f\n", s / alone }' >> "$tmp/units"
done
units=$(sort -g "$tmp/units" | awk '{ u[NR] = $1 } END { printf "%.2f", u[int((NR + 1) / 2)] }')

# Allreduce over threads at each rank count: alpha and beta fitted per group; the ring's fits are averaged.
files=""
for n in ${ranks//,/ }; do
  "$bin/bench_allreduce" --device cpu --ranks "$n" --impl ring --sizes 4K:16M:x4 -n 10 -q --csv "$tmp/ar$n.csv"
  files="$files${files:+,}$tmp/ar$n.csv"
done
"$bin/bench_train" --calibrate "$files" --csv "$tmp/fit.csv"
read -r alpha_us gbps < <(awk -F, 'NR > 1 && $2 == "ring" { a += $5; g += $6; n++ } END { printf "%g %g\n", a / n, g / n }' "$tmp/fit.csv")

awk -v f32="$flops32" -v f16="$flops16" -v b="$bytes32" -v a="$alpha_us" -v g="$gbps" -v host="$(hostname)" -v units="$units" \
    -v mc="$matrix_curve" -v mk="$matrix_by_k" -v lin="$measured_linears" -v hc="$hbm_curve" -v ovh="$overhead_us" -v opt="$optimizer_bytes" -v gelu="$gelu_bytes" -v shapes="$shapes" 'BEGIN {
  printf "{\n  \"name\": \"this-machine\",\n"
  printf "  \"source\": \"scripts/calibrate.sh on %s: bench_kernels --device cpu at %s (a block'"'"'s matmul and elementwise op mix per shape, its GeLU, the AdamW update, the fixed cost of an op at B=1,T=1,C=4), bench_allreduce ring over threads (alpha-beta fit)\",\n", host, shapes
  printf "  \"gpu\": {\"name\": \"cpu\", \"matrix_tflops_16\": %.6g, \"matrix_tflops_32\": %.6g,\n", f16 / 1e12, f32 / 1e12
  printf "          \"hbm_gbps\": %.6g, \"hbm_gb\": 8, \"matrix_efficiency\": %s,\n", b / 1e9, mc
  printf "          \"matrix_efficiency_by_k\": %s,\n", mk
  if (lin != "[]") printf "          \"linears\": %s,\n", lin
  printf "          \"hbm_efficiency\": %s, \"compute_units\": %s, \"op_overhead_us\": %s,\n", hc, units, ovh
  printf "          \"gelu_gbps\": %.6g, \"optimizer_gbps\": %.6g},\n", gelu / 1e9, opt / 1e9
  printf "  \"network\": [{\"name\": \"threads\", \"gpus\": 1024, \"gbps\": %.6g, \"efficiency\": 1, \"latency_us\": %.6g}]\n}\n", g, a
}' > "$tmp/system.json"
"$bin/bench_train" --simulate --gpus 1 --system "$tmp/system.json" --quiet  # the schema check
mv "$tmp/system.json" "$out"
echo "calibrate.sh: wrote $out (matmul $flops32 FLOP/s f32 $matrix_curve, by k $matrix_by_k, elementwise $bytes32 B/s $hbm_curve, GeLU $gelu_bytes B/s, AdamW update $optimizer_bytes B/s, op overhead $overhead_us us, allreduce link ${gbps} GB/s, alpha ${alpha_us} us, $units of $cores cores free for compute)"
