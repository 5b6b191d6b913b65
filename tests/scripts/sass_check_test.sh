#!/usr/bin/env bash
# ctest sass_check_script: scripts/sass_check.sh must fail what it is there to catch. On two kernels compiled here,
# one with a local array (stack frame, local loads and stores) fails and one without passes; on this build's kernel
# library a scalar kernel checked for HMMA fails naming the opcode, a kernel absent from the build fails naming
# it, and a matmul v5 kernel passes in the same run; a malformed table and a missing table are usage errors.
# Usage: sass_check_test.sh SOURCE_DIR NVCC KERNEL_LIBRARY TOOLS_DIR WORK_DIR
set -uo pipefail
src=$1 nvcc=$2 lib=$3 tools=$4 work=$5
check=("$src/scripts/sass_check.sh" --arch sm_90 --tools-dir "$tools")
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || exit 1

# expect RC PATTERN... -- ARGS: runs the check with ARGS; its exit status must be RC and its output hold each
# PATTERN (grep -E).
expect() {
  local rc=$1 out got
  shift
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  out=$("${check[@]}" "$@" 2>&1)
  got=$?
  echo "$out"
  [ "$got" -eq "$rc" ] || fail "exit $got, not $rc, for: $*"
  for p in "${patterns[@]}"; do grep -qE -- "$p" <<<"$out" || fail "no '$p' in the output of: $*"; done
}

cat >"$work/local.cu" <<'EOF'
__global__ void with_local(float* o, int i) {
  float a[256];
  for (int j = 0; j < 256; ++j) a[j] = o[j];
  a[i & 255] = 1.f;
  o[0] = a[(i * 7) & 255];
}
__global__ void scalar(float* o) { o[threadIdx.x] *= 2.f; }
EOF
"$nvcc" -arch=sm_90 -c "$work/local.cu" -o "$work/local.o" || fail "nvcc could not compile the test kernels"
printf '_Z10with_localPfi\n_Z6scalarPf\n' >"$work/local.txt"
expect 1 '^FAIL with_local:.*stack frame [1-9][0-9]* bytes.* STL' '^PASS scalar:' \
  -- --table "$work/local.txt" "$work/local.o"
printf '# only the kernel without local memory\n_Z6scalarPf\n' >"$work/scalar.txt"
expect 0 '^PASS scalar' -- --table "$work/scalar.txt" "$work/local.o"

gelu=_ZN8parbench12cuda_kernels19gelu_forward_kernelIfEEvPT_PKS2_l
mma=$(grep -m1 -o '^_Z[^ ]*gemm_mma_kernelI13__nv_bfloat16[^ ]*' "$src/kernels/sass_expectations.txt")
[ -n "$mma" ] || fail "no bf16 matmul v5 kernel in kernels/sass_expectations.txt"
printf '%s HMMA\n_ZN8parbench12cuda_kernels9no_kernelEv\n%s HMMA LDSM LDGSTS\n' "$gelu" "$mma" >"$work/planted.txt"
expect 1 '^FAIL gelu_forward_kernel<float>.*HMMA 0 .*-- no HMMA;' '^FAIL no_kernel: not in the objects' \
  '^PASS gemm_mma_kernel<__nv_bfloat16.*HMMA [1-9][0-9]* LDSM [1-9][0-9]* LDGSTS [1-9]' \
  -- --table "$work/planted.txt" "$lib"

printf '_Z6scalarPf HMMA\nnot_mangled HMMA\n' >"$work/bad.txt"
expect 2 'line 2: "not_mangled" is not a mangled name' -- --table "$work/bad.txt" "$work/local.o"
printf '_Z6scalarPf hmma\n' >"$work/bad_op.txt"
expect 2 'line 1: "hmma" is not an opcode' -- --table "$work/bad_op.txt" "$work/local.o"
expect 2 'no/such.txt' -- --table "$work/no/such.txt" "$work/local.o"
echo "ok: sass_check.sh fails local memory, a missing opcode and an absent kernel, and passes the rest"
