// Self-test kernels of the simt emulator; the same file is compiled by nvcc (cuda_kernels) and by
// g++ for simt (simt_kernels). Some contain bugs on purpose, to show that simt reports them.
#include "device/cuda_compat.h"
#include "tests/simt/selftest_kernels.h"

#include <type_traits>

namespace parbench::PB_KERNEL_NS {

// ---- block reduction: barriers inside a loop (block must be a power of two)
__global__ void block_sum_kernel(int* out, const int* in, int n) {
  __shared__ int s[1024];
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
void block_sum(int* out, const int* in, int n, int block, void* stream) {
  PB_LAUNCH(block_sum_kernel, dim3((n + block - 1) / block), dim3(block), 0, stream)(out, in, n);
  PB_CHECK_LAUNCH();
}

// ---- early-returning threads leave the barriers that follow
__global__ void early_exit_kernel(int* out, int* counts, const int* in, int active) {
  __shared__ int s[1024];
  const int t = threadIdx.x;
  if (t >= active) return;
  s[t] = in[t];
  const int odd = __syncthreads_count(in[t] & 1);
  out[t] = s[active - 1 - t];
  const int all_positive = __syncthreads_and(in[t] > 0);
  const int any_big = __syncthreads_or(in[t] > 1000);
  __syncthreads();
  if (t == 0) counts[0] = odd, counts[1] = all_positive, counts[2] = any_big;
}
void early_exit(int* out, int* counts, const int* in, int block, int active, void* stream) {
  PB_LAUNCH(early_exit_kernel, dim3(1), dim3(block), 0, stream)(out, counts, in, active);
  PB_CHECK_LAUNCH();
}

// ---- dynamic shared memory
__global__ void dynamic_reverse_kernel(float* out, const float* in, int n) {
  PB_DYNAMIC_SHARED(float, s);
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  const int len = min(int(blockDim.x), n - base);
  if (t < len) s[t] = in[base + t];
  __syncthreads();
  if (t < len) out[base + t] = s[len - 1 - t];
}
void dynamic_reverse(float* out, const float* in, int n, int block, void* stream) {
  PB_LAUNCH(dynamic_reverse_kernel, dim3((n + block - 1) / block), dim3(block), block * sizeof(float), stream)(
      out, in, n);
  PB_CHECK_LAUNCH();
}

// ---- warp shuffles
__global__ void shuffle_variants_kernel(int* out, const int* in, int src_lane, unsigned delta, int lane_mask,
                                        int width) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = in[t];
  out[4 * t + 0] = __shfl_sync(0xffffffffu, v, src_lane, width);
  out[4 * t + 1] = __shfl_up_sync(0xffffffffu, v, delta, width);
  out[4 * t + 2] = __shfl_down_sync(0xffffffffu, v, delta, width);
  out[4 * t + 3] = __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
}
void shuffle_variants(int* out, const int* in, int n, int src_lane, unsigned delta, int lane_mask, int width,
                      void* stream) {
  PB_LAUNCH(shuffle_variants_kernel, dim3(n / 64), dim3(64), 0, stream)(out, in, src_lane, delta, lane_mask, width);
  PB_CHECK_LAUNCH();
}

__global__ void shuffle_types_kernel(float* f_out, double* d_out, __nv_bfloat16* bf_out, __half* h_out,
                                     const float* f_in, const double* d_in, const __nv_bfloat16* bf_in,
                                     const __half* h_in, unsigned delta) {
  const int t = threadIdx.x;
  f_out[t] = __shfl_down_sync(0xffffffffu, f_in[t], delta);
  d_out[t] = __shfl_down_sync(0xffffffffu, d_in[t], delta);
  bf_out[t] = __shfl_down_sync(0xffffffffu, bf_in[t], delta);
  h_out[t] = __shfl_down_sync(0xffffffffu, h_in[t], delta);
}
void shuffle_types(float* f_out, double* d_out, std::uint16_t* bf_out, std::uint16_t* h_out, const float* f_in,
                   const double* d_in, const std::uint16_t* bf_in, const std::uint16_t* h_in, unsigned delta,
                   void* stream) {
  PB_LAUNCH(shuffle_types_kernel, dim3(1), dim3(32), 0, stream)(
      f_out, d_out, reinterpret_cast<__nv_bfloat16*>(bf_out), reinterpret_cast<__half*>(h_out), f_in, d_in,
      reinterpret_cast<const __nv_bfloat16*>(bf_in), reinterpret_cast<const __half*>(h_in), delta);
  PB_CHECK_LAUNCH();
}

// ---- votes and warp reductions with a partial mask
__global__ void vote_kernel(unsigned* out, unsigned* sums, unsigned* match, const int* pred, unsigned mask) {
  const int t = threadIdx.x, lane = t % 32;
  if (mask >> lane & 1u) {
    const int p = pred[t];
    out[4 * t + 0] = __ballot_sync(mask, p);
    out[4 * t + 1] = __any_sync(mask, p);
    out[4 * t + 2] = __all_sync(mask, p);
    out[4 * t + 3] = __reduce_max_sync(mask, unsigned(p));
    sums[t] = __reduce_add_sync(mask, unsigned(p));
    match[t] = __match_any_sync(mask, p % 3);
  } else {  // the other lanes vote at the same time in a second group
    out[4 * t + 0] = __ballot_sync(~mask, pred[t]);
    out[4 * t + 1] = out[4 * t + 2] = out[4 * t + 3] = sums[t] = match[t] = unsigned(-7);
  }
}
void vote(unsigned* out, unsigned* sums, unsigned* match, const int* pred, int block, unsigned mask, void* stream) {
  PB_LAUNCH(vote_kernel, dim3(1), dim3(block), 0, stream)(out, sums, match, pred, mask);
  PB_CHECK_LAUNCH();
}

// ---- atomics under contention from every thread of every block
__global__ void atomics_kernel(int* ints, unsigned* uints, float* floats, double* doubles, const int* vals) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = vals[i];
  atomicAdd(&ints[0], 1);
  atomicMax(&ints[1], v);
  atomicMin(&ints[2], v);
  int old = atomicAdd(&ints[3], 0), assumed;
  do {
    assumed = old;
    old = atomicCAS(&ints[3], assumed, assumed + 1);
  } while (old != assumed);
  atomicExch(&ints[4], i);
  atomicSub(&ints[5], 2);
  atomicAdd(&uints[0], unsigned(v));
  atomicAdd(&floats[0], 1.0f);
  atomicAdd(&doubles[0], double(v));
}
void atomics(int* ints, unsigned* uints, float* floats, double* doubles, const int* vals, int blocks, int block,
             void* stream) {
  PB_LAUNCH(atomics_kernel, dim3(blocks), dim3(block), 0, stream)(ints, uints, floats, doubles, vals);
  PB_CHECK_LAUNCH();
}

// ---- tensor cores: one warp per 16x16 tile of C = A * B + C
template <class LayoutB>
__device__ void wmma_tile(float* c, const __nv_bfloat16* a, const __nv_bfloat16* b, int n, int k, int tm, int tn) {
  using namespace nvcuda;
  constexpr bool col = std::is_same_v<LayoutB, wmma::col_major>;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, c + tm * 16 * n + tn * 16, n, wmma::mem_row_major);
  for (int kk = 0; kk < k; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, LayoutB> fb;
    wmma::load_matrix_sync(fa, a + tm * 16 * k + kk, k);
    wmma::load_matrix_sync(fb, col ? b + tn * 16 * k + kk : b + kk * n + tn * 16, col ? k : n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tm * 16 * n + tn * 16, acc, n, wmma::mem_row_major);
}
__global__ void wmma_gemm_bf16_kernel(float* c, const __nv_bfloat16* a, const __nv_bfloat16* b, int m, int n, int k,
                                      bool b_col_major) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int tm = warp / (n / 16), tn = warp % (n / 16);
  if (tm >= m / 16) return;  // whole warps only
  if (b_col_major)
    wmma_tile<nvcuda::wmma::col_major>(c, a, b, n, k, tm, tn);
  else
    wmma_tile<nvcuda::wmma::row_major>(c, a, b, n, k, tm, tn);
}
void wmma_gemm_bf16(float* c, const std::uint16_t* a, const std::uint16_t* b, int m, int n, int k, bool b_col_major,
                    void* stream) {
  const int warps = (m / 16) * (n / 16);
  PB_LAUNCH(wmma_gemm_bf16_kernel, dim3((warps + 3) / 4), dim3(128), 0, stream)(
      c, reinterpret_cast<const __nv_bfloat16*>(a), reinterpret_cast<const __nv_bfloat16*>(b), m, n, k, b_col_major);
  PB_CHECK_LAUNCH();
}

// ---- bugs on purpose
__global__ void missing_barrier_kernel(int* out, const int* in) {
  PB_DYNAMIC_SHARED(int, s);
  const int t = threadIdx.x;
  s[t] = in[t];
  // BUG: a __syncthreads() belongs here; the result depends on the order threads run in.
  out[t] = t + 1 < int(blockDim.x) ? s[t + 1] : s[t];
}
void missing_barrier(int* out, const int* in, int block, void* stream) {
  PB_LAUNCH(missing_barrier_kernel, dim3(1), dim3(block), block * sizeof(int), stream)(out, in);
  PB_CHECK_LAUNCH();
}

__global__ void divergent_barrier_kernel(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
    out[threadIdx.x] = 1;
  } else {
    __syncthreads();
    out[threadIdx.x] = 2;
  }
}
void divergent_barrier(int* out, void* stream) {
  PB_LAUNCH(divergent_barrier_kernel, dim3(1), dim3(64), 0, stream)(out);
  PB_CHECK_LAUNCH();
}

__global__ void deadlock_kernel(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x % 32 == 0)
    v = __shfl_sync(0xffffffffu, v, 1);
  else
    __syncthreads();
  out[threadIdx.x] = v;
}
void deadlock(int* out, void* stream) {
  PB_LAUNCH(deadlock_kernel, dim3(1), dim3(32), 0, stream)(out);
  PB_CHECK_LAUNCH();
}

// ---- launch limits
__global__ void big_shared_kernel(float* out) {
  PB_DYNAMIC_SHARED(float, s);
  const int t = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  const int threads = blockDim.x * blockDim.y * blockDim.z;
  s[t] = float(t);
  __syncthreads();
  if (t == 0) out[blockIdx.y] = s[threads - 1];
}
void big_shared(float* out, int bx, int by, int bz, std::size_t smem, int grid_y, bool opt_in, void* stream) {
  if (opt_in)
    CUDA_CHECK(cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  PB_LAUNCH(big_shared_kernel, dim3(1, grid_y), dim3(bx, by, bz), smem, stream)(out);
  PB_CHECK_LAUNCH();
}
int big_shared_opt_in(int bytes) {
  return int(cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// ---- micro-benchmarks (results checked by the tests)
__global__ void barrier_loop_kernel(int* out, int iters) {
  __shared__ int s[1024];
  const int t = threadIdx.x;
  int acc = 0;
  for (int i = 0; i < iters; ++i) {
    s[t] = i + t;
    __syncthreads();
    acc += s[(t + 1) % blockDim.x];
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + t] = acc;
}
void barrier_loop(int* out, int blocks, int block, int iters, void* stream) {
  PB_LAUNCH(barrier_loop_kernel, dim3(blocks), dim3(block), 0, stream)(out, iters);
  PB_CHECK_LAUNCH();
}

__global__ void shuffle_loop_kernel(int* out, int iters) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = t;  // unsigned: the sums wrap around
  for (int i = 0; i < iters; ++i) v += __shfl_xor_sync(0xffffffffu, v, 1 << (i % 5));
  out[t] = int(v);
}
void shuffle_loop(int* out, int blocks, int block, int iters, void* stream) {
  PB_LAUNCH(shuffle_loop_kernel, dim3(blocks), dim3(block), 0, stream)(out, iters);
  PB_CHECK_LAUNCH();
}

#if defined(PB_SIMT)
// ---- stack overflow (simt only: the recursion defeats nvcc's static stack sizing)
__device__ int deep_recursion(int depth) {
  volatile char pad[512];
  pad[depth % 512] = char(depth);
  if (depth == 0) return 0;
  return deep_recursion(depth - 1) + pad[depth % 512];
}
__global__ void stack_overflow_kernel(int* out, int depth) { out[threadIdx.x] = deep_recursion(depth); }
void stack_overflow(int* out, int depth, void* stream) {
  PB_LAUNCH(stack_overflow_kernel, dim3(1), dim3(32), 0, stream)(out, depth);
  PB_CHECK_LAUNCH();
}

// ---- a kernel launching a kernel (simt only: needs relocatable device code under nvcc)
__global__ void nested_inner_kernel(int* out) { out[threadIdx.x] = 1; }
__global__ void nested_outer_kernel(int* out) {  // out: one int per thread of every block
  if (threadIdx.x == 3) PB_LAUNCH(nested_inner_kernel, dim3(1), dim3(32), 0, nullptr)(out);
  out[blockIdx.x * blockDim.x + threadIdx.x] = 2;  // blocks apart: no two blocks write one element
}
void nested_launch(int* out, int blocks, void* stream) {
  PB_LAUNCH(nested_outer_kernel, dim3(blocks), dim3(32), 0, stream)(out);
  PB_CHECK_LAUNCH();
}
#endif

}  // namespace parbench::PB_KERNEL_NS
