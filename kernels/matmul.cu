// Matmul with bias, out (BT,OC) = inp (BT,C) weight^T (OC,C) + bias (OC), in numbered versions so the
// progression is measurable: 1 naive, 2 shared-memory tiled, 3 register-blocked 2D tiles with 16-byte
// loads, 4 WMMA tensor cores (bf16 in, fp32 accumulate), 5 mma.sync with a cp.async pipeline (matmul_mma.h).
// The backward runs on the version-2 kernel, which takes arbitrary strides, or on version 5 (its operands read
// k-major through ldmatrix.trans; the bf16 default on cuda), and a two-pass column sum for the bias.
#include "kernels/column_sums.h"
#include "device/kernel_common.h"
#include "kernels/matmul_mma.h"

namespace parbench::PB_KERNEL_NS {

// Matmul versions, numbered as in the benchmark: 1 naive, 2 shared-memory tiled, 3 register-blocked 2D
// tiles with 16-byte loads, 4 tensor cores through WMMA (bf16 in, fp32 accumulate; fp32 storage is
// rounded to bf16 on the way in), 5 mma.sync fed by ldmatrix from a 4-stage cp.async ring of swizzled tiles
// (fp32 storage rounded as in 4). 0 picks the default: 3 for fp32; for bf16 5 on cuda (forward and both backward
// products) and 4 on simt, whose emulated tensor-core collectives make 5 the slower one on a CPU.
inline constexpr int kMatmulVersions = 5;
#if defined(__CUDACC__) || defined(PB_EMU_CUDA)
inline constexpr int kDefaultBf16Version = 5;
#else
inline constexpr int kDefaultBf16Version = 4;
#endif

// ---- 1: one thread per output element, straight from global memory.
template <class T>
__global__ void matmul_naive_kernel(T* out, const T* inp, const T* weight, const T* bias, int M, int N, int K) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  int m = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = bias ? to_f(bias[n]) : 0.f;
  const T* a = inp + std::int64_t(m) * K;
  const T* w = weight + std::int64_t(n) * K;
  for (int k = 0; k < K; ++k) acc += to_f(a[k]) * to_f(w[k]);
  out[std::int64_t(m) * N + n] = from_f<T>(acc);
}

// ---- 2: 16x16 output tile per block, 16x16 operand tiles staged through shared memory.
// C[m,n] (+)= sum_k A(m,k) B(n,k) + bias[n] with A(m,k) = a[m*sam + k*sak], B(n,k) = b[n*sbn + k*sbk],
// so one kernel serves the forward (both operands k-contiguous) and both backward products.
constexpr int kTile = 16;
template <class T>
__global__ void gemm_tiled_kernel(T* c, const T* a, const T* b, const T* bias, int M, int N, int K, std::int64_t sam,
                                  std::int64_t sak, std::int64_t sbn, std::int64_t sbk, bool accumulate) {
  __shared__ float as[kTile][kTile + 1];  // +1: no bank conflicts on the transposed reads
  __shared__ float bs[kTile][kTile + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    int k = k0 + tx;
    as[ty][tx] = (m0 + ty < M && k < K) ? to_f(a[(m0 + ty) * sam + k * sak]) : 0.f;
    bs[ty][tx] = (n0 + ty < N && k < K) ? to_f(b[(n0 + ty) * sbn + k * sbk]) : 0.f;
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) acc += as[ty][kk] * bs[tx][kk];
    __syncthreads();
  }
  int m = m0 + ty, n = n0 + tx;
  if (m >= M || n >= N) return;
  if (bias) acc += to_f(bias[n]);
  T* o = c + std::int64_t(m) * N + n;
  if (accumulate) acc += to_f(*o);
  *o = from_f<T>(acc);
}

// Loads Pack16<T>::n consecutive k-elements of one operand row into dst[e * stride] as floats: one
// 16-byte load when `vec` (the caller checked alignment and K % n == 0) and the chunk is in range.
template <class T>
__device__ inline void load_chunk(float* dst, int stride, const T* row, bool row_ok, int k, int K, bool vec) {
  constexpr int E = Pack16<T>::n;
  if (row_ok && vec && k + E <= K) {
    Pack16<T> p = load16(row + k);
#pragma unroll
    for (int e = 0; e < E; ++e) dst[e * stride] = to_f(p.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e) dst[e * stride] = (row_ok && k + e < K) ? to_f(row[k + e]) : 0.f;
  }
}

// ---- 3: 64x64 output tile per block of 256 threads, each thread a 4x4 register block; operand tiles
// are loaded 16 bytes at a time and stored k-major so the inner loop reads rows of shared memory.
constexpr int kBM = 64, kBN = 64, kBK = 16, kTM = 4, kTN = 4;
template <class T>
__global__ void matmul_regtile_kernel(T* out, const T* inp, const T* weight, const T* bias, int M, int N, int K,
                                      bool vec) {
  __shared__ float as[kBK][kBM + 4];
  __shared__ float ws[kBK][kBN + 4];
  constexpr int E = Pack16<T>::n;
  constexpr int chunks_per_row = kBK / E;
  int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  float acc[kTM][kTN] = {};
  for (int k0 = 0; k0 < K; k0 += kBK) {
    for (int p = tid; p < kBM * chunks_per_row; p += blockDim.x) {
      int r = p / chunks_per_row, kc = (p % chunks_per_row) * E;
      load_chunk(&as[kc][r], kBM + 4, inp + std::int64_t(m0 + r) * K, m0 + r < M, k0 + kc, K, vec);
      load_chunk(&ws[kc][r], kBN + 4, weight + std::int64_t(n0 + r) * K, n0 + r < N, k0 + kc, K, vec);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[kTM], w[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = as[kk][ty * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) w[j] = ws[kk][tx * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * w[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    int m = m0 + ty * kTM + i;
    if (m >= M) break;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      int n = n0 + tx * kTN + j;
      if (n < N) out[std::int64_t(m) * N + n] = from_f<T>(acc[i][j] + (bias ? to_f(bias[n]) : 0.f));
    }
  }
}

// ---- 4: 64x64 output tile per block of 4 warps, each warp 2x2 WMMA 16x16x16 fragments (bf16 inputs,
// fp32 accumulators); results staged through shared memory for the bias and the bounds checks.
constexpr int kWLD = kBK + 8;  // bf16 leading dimension: a multiple of 8 and rows 32-byte aligned
template <class T>
__global__ void matmul_wmma_kernel(T* out, const T* inp, const T* weight, const T* bias, int M, int N, int K,
                                   bool vec) {
  namespace wmma = nvcuda::wmma;
  alignas(32) __shared__ __nv_bfloat16 as[kBM * kWLD];
  alignas(32) __shared__ __nv_bfloat16 ws[kBN * kWLD];
  alignas(32) __shared__ float cs[kBM * (kBN + 4)];
  constexpr int E = Pack16<T>::n;
  constexpr int chunks_per_row = kBK / E;
  int tid = threadIdx.x, warp = tid / 32;
  int wm = warp / 2, wn = warp % 2;
  int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
  for (int k0 = 0; k0 < K; k0 += kBK) {
    for (int p = tid; p < kBM * chunks_per_row; p += blockDim.x) {
      int r = p / chunks_per_row, kc = (p % chunks_per_row) * E;
      float va[E], vw[E];
      load_chunk(va, 1, inp + std::int64_t(m0 + r) * K, m0 + r < M, k0 + kc, K, vec);
      load_chunk(vw, 1, weight + std::int64_t(n0 + r) * K, n0 + r < N, k0 + kc, K, vec);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        as[r * kWLD + kc + e] = __float2bfloat16(va[e]);
        ws[r * kWLD + kc + e] = __float2bfloat16(vw[e]);
      }
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], as + (wm * 32 + i * 16) * kWLD, kWLD);
    // B(k,n) = weight[n,k]: the n-major tile is B in column-major order.
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], ws + (wn * 32 + j * 16) * kWLD, kWLD);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(cs + (wm * 32 + i * 16) * (kBN + 4) + wn * 32 + j * 16, acc[i][j], kBN + 4,
                              wmma::mem_row_major);
  __syncthreads();
  for (int p = tid; p < kBM * kBN; p += blockDim.x) {
    int r = p / kBN, cc = p % kBN;
    int m = m0 + r, n = n0 + cc;
    if (m < M && n < N) out[std::int64_t(m) * N + n] = from_f<T>(cs[r * (kBN + 4) + cc] + (bias ? to_f(bias[n]) : 0.f));
  }
}

template <class T>
__global__ void add_bias_kernel(T* out, const T* bias, std::int64_t n, int OC) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f<T>(to_f(out[i]) + to_f(bias[i % OC]));
}

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, int version,
                    void* stream) {
  PB_CHECK(version >= 0 && version <= kMatmulVersions,
           "matmul version " + std::to_string(version) + " does not exist; use 0 (default) or 1.." +
               std::to_string(kMatmulVersions));
  if (BT == 0 || OC == 0) return;
  if (version == 0) version = sizeof(T) == 2 ? kDefaultBf16Version : 3;
  using D = DevT<T>;
  // 16-byte loads need 16-byte aligned rows.
  constexpr int E = Pack16<T>::n;
  bool vec = C % E == 0 && reinterpret_cast<std::uintptr_t>(inp) % 16 == 0 &&
             reinterpret_cast<std::uintptr_t>(weight) % 16 == 0;
  switch (version) {
    case 1:
      PB_LAUNCH(matmul_naive_kernel<D>, dim3(ceil_div(OC, 32), ceil_div(BT, 8)), dim3(32, 8), 0, stream)
      (dev(out), dev(inp), dev(weight), dev(bias), BT, OC, C);
      break;
    case 2:
      PB_LAUNCH(gemm_tiled_kernel<D>, dim3(ceil_div(OC, kTile), ceil_div(BT, kTile)), dim3(kTile, kTile), 0, stream)
      (dev(out), dev(inp), dev(weight), dev(bias), BT, OC, C, C, 1, C, 1, false);
      break;
    case 3:
      PB_LAUNCH(matmul_regtile_kernel<D>, dim3(ceil_div(OC, kBN), ceil_div(BT, kBM)), 256, 0, stream)
      (dev(out), dev(inp), dev(weight), dev(bias), BT, OC, C, vec);
      break;
    case 4:
      PB_LAUNCH(matmul_wmma_kernel<D>, dim3(ceil_div(OC, kBN), ceil_div(BT, kBM)), 128, 0, stream)
      (dev(out), dev(inp), dev(weight), dev(bias), BT, OC, C, vec);
      break;
    case 5: {
      // Both operands k-contiguous: inp (BT, C) and weight (OC, C).
      MmaOperand<D> a{dev(inp), C, BT, mma_vec_ok(inp, C, C)}, b{dev(weight), C, OC, mma_vec_ok(weight, C, C)};
      launch_gemm_mma<D, true, true>(dev(out), a, b, dev(bias), C, false, stream);
      return;
    }
  }
  PB_CHECK_LAUNCH();
}

template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, float* scratch, int BT,
                     int C, int OC, bool accumulate, int version, void* stream) {
  using D = DevT<T>;
  dim3 block(kTile, kTile);
  if (version == 0 && sizeof(T) == 2) version = kDefaultBf16Version;
  if (version == 5 && dinp && BT > 0 && C > 0) {
    // dinp (BT, C) = dout (BT, OC) weight (OC, C): A = dout k-contiguous, B(c, o) = weight[o, c] k-major.
    MmaOperand<D> a{dev(dout), OC, BT, mma_vec_ok(dout, OC, OC)}, b{dev(weight), C, C, mma_vec_ok(weight, C, C)};
    launch_gemm_mma<D, true, false>(dev(dinp), a, b, static_cast<const D*>(nullptr), OC, accumulate, stream);
  } else if (dinp && BT > 0 && C > 0) {
    // dinp[m,c] = sum_o dout[m,o] weight[o,c]
    PB_LAUNCH(gemm_tiled_kernel<D>, dim3(ceil_div(C, kTile), ceil_div(BT, kTile)), block, 0, stream)
    (dev(dinp), dev(dout), dev(weight), static_cast<const D*>(nullptr), BT, C, OC, OC, 1, 1, C, accumulate);
    PB_CHECK_LAUNCH();
  }
  if (version == 5 && dweight && OC > 0 && C > 0) {
    // dweight (OC, C) = dout^T (OC, BT) inp (BT, C): A(o, m) = dout[m, o] and B(c, m) = inp[m, c], both k-major.
    MmaOperand<D> a{dev(dout), OC, OC, mma_vec_ok(dout, OC, OC)}, b{dev(inp), C, C, mma_vec_ok(inp, C, C)};
    launch_gemm_mma<D, false, false>(dev(dweight), a, b, static_cast<const D*>(nullptr), BT, accumulate, stream);
  } else if (dweight && OC > 0 && C > 0) {
    // dweight[o,c] = sum_m dout[m,o] inp[m,c]
    PB_LAUNCH(gemm_tiled_kernel<D>, dim3(ceil_div(C, kTile), ceil_div(OC, kTile)), block, 0, stream)
    (dev(dweight), dev(dout), dev(inp), static_cast<const D*>(nullptr), OC, C, BT, 1, OC, 1, C, accumulate);
    PB_CHECK_LAUNCH();
  }
  if (dbias && OC > 0) column_sum(dev(dbias), dev(dout), BT, OC, accumulate, scratch, stream);
}

template <class T>
void add_bias(T* out, const T* bias, int BT, int OC, void* stream) {
  std::int64_t n = std::int64_t(BT) * OC;
  if (n == 0) return;
  PB_LAUNCH(add_bias_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(out), dev(bias), n, OC);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                      \
  template void matmul_forward<T>(T*, const T*, const T*, const T*, int, int, int, int, void*);               \
  template void matmul_backward<T>(T*, T*, T*, const T*, const T*, const T*, float*, int, int, int, bool, int,   \
                                   void*);                                                                    \
  template void add_bias<T>(T*, const T*, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
