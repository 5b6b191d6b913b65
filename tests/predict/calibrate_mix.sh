#!/bin/sh
# scripts/calibrate_kernels.awk on bench_kernels rows made up so that the answer is known by hand: a fixed cost of
# 2 us per op (the near-empty shape), and a second shape with 4x the work of the first taking 8x its time (less the
# fixed cost), so half its rates. Shape 1 (B1 T32 C64): forward matmuls 3 x 1 MFLOP in 3 x 100 us, the input and
# weight gradient rows 1 MFLOP in 100 us each (1e10 FLOP/s): 3 x 3e6 FLOPs over 300 us + 6e6 / 1e10 s = 1e10
# FLOP/s at 0.001 GFLOP (the attention rows, 2 x 50 us, stay out of it); elementwise 33 x 8192 bytes over
# 2 x (3 x 10) = 60 us = 4.5056e9 B/s at 11/3 x 8192 bytes; GeLU 24 x 8192 bytes over 2 x 20 us = 4.9152e9 B/s
# (2.4576e9 at the second shape: the median of the two, 3.6864e9); the AdamW update 1e6 bytes in 100 us (1e10 B/s,
# 5e9 at the second shape: 7.5e9). Thresholds halfway in log size: 0.002 GFLOP, 60074.7 bytes. A depth shape (B1
# T32 C16) has its forward and input-gradient rows at 2e10 FLOP/s (1 MFLOP in 50 us) and a weight-gradient row at
# 100x that, which the curves by k must leave out. By k, each point the median of its rows: forward k = 16 (C16's
# qkv and fc) 2e10; k = 64 (C64's qkv and fc at 1e10 and 5e9, C16's fc projection at 2e10) 1e10; k = 256 (C64's fc
# projection) 7.5e9; input gradient k = 64 2e10, k = 256 7.5e9; weight gradient k = B x T = 32 1e10, 128 5e9. The
# peak is the best of all: 2e10, so the GFLOP curve's points are 0.5 and 0.25. Two --linear layers, their parts in
# 102, 52 and 202 us and 12, 22 and 32 us, come out as measured linears in the order they came, less the fixed cost.
# Then rows missing at a shape, or a linear's part, are refused. The op table's listing (bench_kernels --list-ops)
# is made up too: its cost roles say which row is which, the names being the table's.
#   calibrate_mix.sh SCRIPTS_DIR
set -eu
awk_file=$1/calibrate_kernels.awk
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# rows SHAPE K W [OPS]: every op of the mix at SHAPE (or those matching the regular expression OPS) taking
# (t - 2) x K + 2 us (2 us when K = 0), W x the work
rows() {
  awk -v shape="$1" -v k="$2" -v w="$3" -v ops="${4:-.}" 'BEGIN {
    split("matmul_forward_qkv/reference matmul_forward_fc/reference matmul_forward_fcproj/reference", mm, " ")
    for (i = 1; i <= 3; i++) row(mm[i], 100, 1e6)
    row("matmul_backward_input_fc", 100, 1e6); row("matmul_backward_weight_fc", 100, 1e6)
    row("flash_attention_forward", 50, 1); row("flash_attention_backward", 50, 1)
    split("layernorm_forward layernorm_backward residual_forward", ew, " ")
    for (i = 1; i <= 3; i++) row(ew[i], 10, 1)
    row("gelu_forward", 20, 1); row("gelu_backward", 20, 1)
    row("adamw_update", 100, 1, 1e6)
  }
  function row(op, us, flops, bytes,    t) {  # bytes/s is 1 unless `bytes` is given
    if (op !~ ops) return
    t = k == 0 ? 2 : us * k + 2
    printf "\"%s/cpu/f32/%s/min_time:0.050/manual_time\",10,%.10g,%.10g,us,,,,,,%.10g,1,%.10g\n", op, shape, t, t,
           k == 0 ? 1 / (t * 1e-6) : flops * w / (t * 1e-6), (bytes > 0 ? bytes * w / (t * 1e-6) : 1)
  }'
}
{
  echo 'name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,error_occurred,error_message,"FLOP/s","batch","bytes/s"'
  rows B1_T1_C4_NH1_V4 0 1
  rows B1_T32_C64_NH4_V256 1 1
  rows B4_T32_C64_NH4_V256 8 4
  rows B1_T32_C16_NH4_V64 0.5 1 'forward|input'
  rows B1_T32_C16_NH4_V64 0.01 1 'weight'
  linear() {  # linear NAME FORWARD_US INPUT_US WEIGHT_US
    for part in "forward $2" "input_gradient $3" "weight_gradient $4"; do
      set -- "$1" $part
      version=; [ "$2" = forward ] && version=/reference
      echo "\"linear_$2$version/cpu/f32/$1/min_time:0.050/manual_time\",10,$3,$3,us,,,,,,1,1,1"
    done
  }
  linear T256_I64_O192 102 52 202
  linear T32_I32_O64 12 22 32
} > "$dir/k.csv"
cat >"$dir/ops.csv" <<'EOF'
name,kind,backward,forward_of,cost,k,per_block
matmul_forward_qkv,matmul_versions,,,matrix_forward,C,1
matmul_forward_fc,matmul_versions,matmul_backward_fc,,matrix_forward,C,1
matmul_forward_fcproj,matmul_versions,,,matrix_forward,4C,1
matmul_backward_input_fc,per_dtype,,matmul_forward_fc,input_gradient,4C,1
matmul_backward_weight_fc,per_dtype,,matmul_forward_fc,weight_gradient,BT,1
flash_attention_forward,per_dtype,flash_attention_backward,,measured_attention,,1
flash_attention_backward,per_dtype,,,memory,,1
layernorm_forward,per_dtype,layernorm_backward,,elementwise,,2
layernorm_backward,per_dtype,,,elementwise,,2
residual_forward,per_dtype,residual_backward,,elementwise,,2
gelu_forward,per_dtype,gelu_backward,,gelu,,1
gelu_backward,per_dtype,,,gelu,,1
adamw_update,per_dtype,,,optimizer,,1
linear_forward,linear,,,forward,,1
linear_input_gradient,linear,,,input_gradient,,1
linear_weight_gradient,linear,,,weight_gradient,,1
EOF
fit() { awk -v overhead_shape=B1_T1_C4_NH1_V4 -v depth_shapes='B1_T32_C16_NH4_V64' -f "$awk_file" "$dir/ops.csv" "$1"; }
got=$(fit "$dir/k.csv")
want="overhead_us=2 peak_flops=2e+10 matrix_curve='[[0.002, 0.2500], [0, 0.5000]]'\
 matrix_by_k='{\"forward\": [[128, 0.3750], [32, 0.5000], [0, 1.0000]], \"input_gradient\": [[128, 0.3750], [0, 1.0000]],\
 \"weight_gradient\": [[64, 0.2500], [0, 0.5000]]}' peak_bytes=4.5056e+09 hbm_curve='[[60074.7, 0.5000], [0, 1.0000]]'\
 gelu_bytes=3.6864e+09 optimizer_bytes=7.5e+09 measured_linears='[{\"tokens\": 256, \"in\": 64, \"out\": 192, \"dtype\": \"f32\",\
 \"forward_us\": 100, \"input_gradient_us\": 50, \"weight_gradient_us\": 200}, {\"tokens\": 32, \"in\": 32, \"out\": 64,\
 \"dtype\": \"f32\", \"forward_us\": 10, \"input_gradient_us\": 20, \"weight_gradient_us\": 30}]'"
[ "$got" = "$want" ] || { echo "got:  $got"; echo "want: $want"; exit 1; }
grep -v 'B4_T32_C64_NH4_V256.*gelu_backward\|gelu_backward/cpu/f32/B4_T32' "$dir/k.csv" > "$dir/short.csv"
if err=$(fit "$dir/short.csv" 2>&1); then
  echo "a shape without its gelu_backward row was accepted: $err"; exit 1
fi
echo "$err" | grep -q "shape B4_T32_C64_NH4_V256 lacks matmul, elementwise, GeLU or optimizer rows" ||
  { echo "unexpected: $err"; exit 1; }
grep -v 'adamw_update/cpu/f32/B1_T32' "$dir/k.csv" > "$dir/short.csv"
if err=$(fit "$dir/short.csv" 2>&1); then
  echo "a shape without its adamw_update row was accepted: $err"; exit 1
fi
echo "$err" | grep -q "shape B1_T32_C64_NH4_V256 lacks" || { echo "unexpected: $err"; exit 1; }
grep -v 'linear_input_gradient/cpu/f32/T32_I32' "$dir/k.csv" > "$dir/short.csv"
if err=$(fit "$dir/short.csv" 2>&1); then
  echo "a linear without its input-gradient row was accepted: $err"; exit 1
fi
echo "$err" | grep -q "linear T32_I32_O64 lacks" || { echo "unexpected: $err"; exit 1; }
echo "calibrate_mix: ok"
