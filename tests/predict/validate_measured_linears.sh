#!/bin/sh
# The way a GPU's own GEMM times reach the published tables: predict_validate --list-linears names the weight
# matmuls of a table's rows (known by hand for NVIDIA's GPT-3 175B at tp 4, mbs 1, s 2048, and the quarters of the
# tokens its userbuffers split them into), made-up cuBLAS rows
# for exactly those shapes become measured linears through bench_train --calibrate --system-out, and
# predict_validate --system predicts the table on that file: with every GEMM at 10 ms (about ten times what the
# curves give) every row's step must be longer than on the built-in system. Then the same for flash attention
# (--list-attention, an sdpa_compare.py CSV).
#   validate_measured_linears.sh BIN_DIR PUBLISHED_DIR
set -eu
bin=$1
table=$2/nvidia-dgxc2024.csv
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
list=$("$bin/predict_validate" "$table" --list-linears dgx-h100)
want=512x3072x12288,512x12288x9216,512x12288x12288,2048x3072x12288,2048x12288x9216,2048x12288x12288,2048x12288x12800
[ "$list" = "$want" ] || { echo "--list-linears printed '$list', expected '$want'"; exit 1; }

echo "name,iterations,real_time,cpu_time,time_unit,batch,flops_per_s,bytes_per_s,pct_cublas,pct_cublaslt,pct_roofline,error_occurred,error_message" > "$dir/linears.csv"
for shape in $(echo "$list" | tr ',' ' '); do
  name=$(echo "$shape" | awk -Fx '{ printf "T%s_I%s_O%s", $1, $2, $3 }')
  for part in forward input_gradient weight_gradient; do
    echo "linear_$part/cublas/cuda/bf16/$name,10,10,10,ms,1,1e12,1e9,100,,,0," >> "$dir/linears.csv"
  done
done
"$bin/bench_train" --calibrate "$dir/linears.csv" --system dgx-h100 --dtype bf16 --system-out "$dir/measured.json" \
  > "$dir/calibrate.txt"
grep -q '^# measured linears' "$dir/calibrate.txt"
# Their 21 GEMMs at 10 ms each over 989 TFLOP/s, three per shape: 38.7 GFLOP (the smallest decade: a point from size
# 0) 0.003908 efficient; from 100 GFLOP 116 (0.01173), 155 (two shapes, 0.01563), 464 (0.04690), 618 (0.06254) and
# 644 (0.06514): 18 GEMMs, whose median is (0.01563 + 0.04690) / 2 = 0.03127.
grep -q '^# matrix efficiency by GFLOP of the measured linears' "$dir/calibrate.txt"
awk '$1 == "100" && $2 == "0.03127" { high = 1 } $1 == "0" && $2 == "0.003908" { low = 1 } END { exit !(high && low) }' \
  "$dir/calibrate.txt" ||
  { echo "the measured linears' curve is not the one worked out by hand"; cat "$dir/calibrate.txt"; exit 1; }
[ "$(grep -o '"forward_us"' "$dir/measured.json" | wc -l)" -eq 7 ] || { echo "measured.json lacks its 7 linears"; exit 1; }

steps() {  # the predicted column of each step_s row
  awk '{ for (i = 1; i < NF; i++) if ($i == "step_s") print $(i + 2) }'
}
"$bin/predict_validate" "$table" | steps > "$dir/builtin.txt"
"$bin/predict_validate" "$table" --system dgx-h100="$dir/measured.json" > "$dir/measured.txt"
grep -q "(.*measured.json)" "$dir/measured.txt" || { echo "the tables were not predicted on measured.json"; exit 1; }
steps < "$dir/measured.txt" > "$dir/measured_steps.txt"
[ "$(wc -l < "$dir/builtin.txt")" -eq 10 ] || { echo "expected 10 step rows"; cat "$dir/builtin.txt"; exit 1; }
paste "$dir/builtin.txt" "$dir/measured_steps.txt" |
  awk '{ print; if (!($2 > $1)) bad++ } END { if (bad) { print bad " rows not slower with 10 ms GEMMs"; exit 1 } }'

# Attention the same way: NVIDIA's rows run flash attention of 1 sample, 96 / 4 = 24 heads of 12288 / 96 = 128 over
# 2048 tokens; scripts/sdpa_compare.py's CSV (made up: 50 ms forward, 100 ms backward, far slower than the GEMM
# curves make it) through --calibrate gives measured attention, and every row is slower on it.
attention=$("$bin/predict_validate" "$table" --list-attention dgx-h100)
[ "$attention" = "1,2048,24,128" ] || { echo "--list-attention printed '$attention', expected '1,2048,24,128'"; exit 1; }
{ echo "B,T,NH,hs,op,ours_us,sdpa_us,pct_sdpa"
  echo "1,2048,24,128,flash_attention_forward,,50000,"
  echo "1,2048,24,128,flash_attention_backward,,100000,"; } > "$dir/sdpa.csv"
"$bin/bench_train" --calibrate "$dir/sdpa.csv" --system dgx-h100 --dtype bf16 --system-out "$dir/attention.json" \
  > "$dir/attention.txt"
grep -q '^# measured attention' "$dir/attention.txt"
grep -Eq '"backward_us": (100000|99999\.9+)(,|$)' "$dir/attention.json" ||
  { echo "attention.json lacks the measured backward"; exit 1; }
"$bin/predict_validate" "$table" --system dgx-h100="$dir/attention.json" | steps > "$dir/attention_steps.txt"
paste "$dir/builtin.txt" "$dir/attention_steps.txt" |
  awk '{ print; if (!($2 > $1)) bad++ } END { if (bad) { print bad " rows not slower with 150 ms attention"; exit 1 } }'
echo "validate_measured_linears: ok"
