#!/usr/bin/env bash
# ctest gpu_session_tiny: scripts/gpu_session.sh --emulated --tiny on this build's programs (no build, no nested
# ctest) must exit 0 and write a summary with every collective, both bench_kernels dtypes, the linears phase (cuBLAS
# rows, the system file with their measured linears, the H100 tables predicted on it), the 1 KiB allreduce
# latency steps (plain and -G), every runnable training combination and the Llama model's (llama_rows), each
# step with exit status 0, no data-check error and a --check difference; a bad option must exit 2 naming it.
# Usage: gpu_session_check.sh SOURCE_DIR BIN_DIR OUT_DIR
set -uo pipefail
src=$1 bin=$2 out=$3
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$out"
"$src/scripts/gpu_session.sh" --emulated --tiny --prebuilt "$bin" --skip tests --out "$out" >"$out.log" 2>&1
rc=$?
tail -n 4 "$out.log"
[ "$rc" -eq 0 ] || fail "gpu_session.sh exited $rc (log: $out.log)"
summary=$out/summary.md
[ -s "$summary" ] || fail "no $summary"
# Table rows: | step | rc | wall s | key numbers |
rows=$(grep '^| ' "$summary" | grep -v -e '^| step |' -e '^|---')
bad=$(awk -F' [|] ' '$2 != "0"' <<<"$rows")
[ -z "$bad" ] || fail "steps without exit status 0: $bad"
want=(bench_kernels_f32 bench_kernels_bf16 linears_bf16 dgx-h100-measured validate_measured
      allreduce_latency_r2 allreduce_latency_graph_r2)
while read -r c; do
  want+=("${c}_r1" "${c}_r2" "${c}_r4")
done < <(sed -nE 's/^ *\{Collective::[a-z0-9_]+, *"([a-z0-9_-]+)".*/\1/p' "$src/collectives/table/collective_table.cpp")
for t in $("$bin/bench_train" --list-runnable | awk '!/^#/ { print $1 }'); do want+=("train_$t"); done
llama_rows=$(sed -nE 's/^llama_rows=" *(.*[^ ]) *"$/\1/p' "$src/scripts/gpu_session.sh")
[ -n "$llama_rows" ] || fail "no llama_rows in scripts/gpu_session.sh"
for t in $llama_rows; do want+=("train_llama_$t"); done
[ ${#want[@]} -gt 20 ] || fail "too few expected steps: ${want[*]}"
for step in "${want[@]}"; do
  line=$(grep -F "| $step | " <<<"$rows") || fail "no row for step $step"
  case $step in
    bench_kernels_*) grep -q ', 0 errors' <<<"$line" || fail "$line" ;;
    linears_bf16) grep -q '^| linears_bf16 | 0 | [0-9.]* | 6 rows, 0 errors' <<<"$line" || fail "$line" ;;
    dgx-h100-measured) grep -q '| 2 measured linears, 0 measured attention shapes' <<<"$line" || fail "$line" ;;
    validate_measured) grep -q 'nvidia-dgxc-gpt3-175b [0-9.]*% -> [0-9.]*%' <<<"$line" || fail "$line" ;;
    train_*) grep -q -- '--check max diff [0-9]' <<<"$line" || fail "$line" ;;
    *) grep -q 'wrong 0' <<<"$line" || fail "$line" ;;
  esac
done
if [ ! -s "$out/allreduce_r2.csv" ] || [ ! -s "$out/allreduce_r2.txt" ]; then fail "allreduce_r2's raw output is missing"; fi

err=$("$src/scripts/gpu_session.sh" --emulated --tinyy 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] || fail "a bad option exited $rc, not 2"
grep -q "'--tinyy'.*accepted: --emulated, --tiny" <<<"$err" || fail "a bad option's message: $err"
echo "ok: ${#want[@]} steps, each with exit status 0"
