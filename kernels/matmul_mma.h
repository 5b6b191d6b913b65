// Matmul version 5, included by matmul.cu: C[m,n] (+)= sum_k A(m,k) B(n,k) (+ bias[n]) on tensor cores through
// mma.sync m16n8k16 (bf16 in, fp32 accumulate), operands staged by a multi-stage cp.async ring into swizzled
// shared tiles and read with ldmatrix (.trans where an operand is not k-contiguous), for any M, N, K.
#pragma once
#include "device/kernel_common.h"
#include "device/mma.h"

namespace parbench::PB_KERNEL_NS {

// A BM x BN block tile over WM x WN warps, k steps of BK = 32, a ring of STAGES shared tiles per operand.
template <int BM_, int BN_, int WM_, int WN_, int STAGES_>
struct MmaTiles {
  static constexpr int BM = BM_, BN = BN_, BK = 32, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int threads = 32 * WM * WN;
  static constexpr int warp_m = BM / WM, warp_n = BN / WN;
  static constexpr int MI = warp_m / 16, NI = warp_n / 8;  // m16 x n8 mma tiles per warp
  static constexpr int a_elems = BM * BK, b_elems = BN * BK;
  static constexpr int smem_bytes = STAGES * (a_elems + b_elems) * 2;
  static_assert(MI >= 1 && NI % 2 == 0 && warp_m % 16 == 0 && STAGES >= 2, "warp tiles of m16 x (2 n8) mma tiles");
};
// The forward's and the backward's tiles: 128 x 128 per block of 8 warps (2 x 4), warp tiles 64 x 32, 4 stages.
using MmaTiles128 = MmaTiles<128, 128, 2, 4, 4>;

// One operand of the product, `rows` (M or N) by K: element (r, k) at p[r * ld + k] when the template's k_contig
// is true, else at p[k * ld + r]. `vec`: 16-byte aligned chunks of 8 along the contiguous dimension, so whole
// chunks go by cp.async (bf16 storage only); otherwise elements are loaded one by one and rounded to bf16.
template <class T>
struct MmaOperand {
  const T* p;
  std::int64_t ld;
  int rows;
  bool vec;
};

// Offset of element (r, k) in one stage's swizzled shared tile of an operand of R rows: [R][BK] when
// k-contiguous, [BK][R] when not (so ldmatrix.trans reads it).
template <bool KC, int R, int BK>
__device__ inline int mma_tile_offset(int r, int k) {
  if constexpr (KC) return swizzle_b16<BK>(r, k);
  else return swizzle_b16<R>(k, r);
}

// Fills one stage of an operand's ring with rows r0.. and k-columns k0.. (zeros outside the matrix), a chunk of
// 8 elements at a time, each thread every threads-th chunk.
template <class T, bool KC, int R, int BK, int kThreads>
__device__ inline void mma_load_tile(__nv_bfloat16* s, const MmaOperand<T>& op, int r0, int k0, int K,
                                     AsyncCopies& copies) {
  constexpr int chunks = R * BK / 8;
  for (int p = threadIdx.x; p < chunks; p += kThreads) {
    const int r = KC ? p / (BK / 8) : (p % (R / 8)) * 8, k = KC ? (p % (BK / 8)) * 8 : p / (R / 8);
    __nv_bfloat16* dst = s + mma_tile_offset<KC, R, BK>(r, k);
    const int gr = r0 + r, gk = k0 + k;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      if (op.vec) {
        const bool in = gr < op.rows && gk < K;
        const T* src = in ? op.p + (KC ? gr * op.ld + gk : std::int64_t(gk) * op.ld + gr) : op.p;
        copies.copy16(dst, src, in ? 16 : 0);
        continue;
      }
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int er = KC ? gr : gr + e, ek = KC ? gk + e : gk;
      const bool in = er < op.rows && ek < K;
      dst[e] = __float2bfloat16(in ? to_f(op.p[KC ? er * op.ld + ek : std::int64_t(ek) * op.ld + er]) : 0.f);
    }
  }
}

// One stage's k-steps for this warp: A fragments (ldmatrix x4, .trans for a k-major tile), B fragments two n8
// tiles per ldmatrix x4, then MI x NI mma.sync into the accumulators.
template <class Tl, bool AKC, bool BKC>
__device__ inline void mma_stage(float (&acc)[Tl::MI][Tl::NI][4], const __nv_bfloat16* as, const __nv_bfloat16* bs,
                                 int wm0, int wn0) {
  const int lane = threadIdx.x % 32, j = lane / 8, r = lane % 8;
#pragma unroll
  for (int kk = 0; kk < Tl::BK; kk += 16) {
    std::uint32_t af[Tl::MI][4], bfr[Tl::NI][2];
#pragma unroll
    for (int mi = 0; mi < Tl::MI; ++mi) {
      // Matrices 0..3 of the x4: (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15).
      const int m = wm0 + mi * 16 + (j % 2) * 8 + r, k = kk + (j / 2) * 8;
      if constexpr (AKC) ldmatrix_m8n8<4, false>(af[mi], as + mma_tile_offset<true, Tl::BM, Tl::BK>(m, k));
      else ldmatrix_m8n8<4, true>(af[mi], as + mma_tile_offset<false, Tl::BM, Tl::BK>(m - r, k + r));
    }
#pragma unroll
    for (int ni = 0; ni < Tl::NI; ni += 2) {
      // Matrices 0..3: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
      const int n = wn0 + ni * 8 + (j / 2) * 8 + r, k = kk + (j % 2) * 8;
      std::uint32_t x[4];
      if constexpr (BKC) ldmatrix_m8n8<4, false>(x, bs + mma_tile_offset<true, Tl::BN, Tl::BK>(n, k));
      else ldmatrix_m8n8<4, true>(x, bs + mma_tile_offset<false, Tl::BN, Tl::BK>(n - r, k + r));
      bfr[ni][0] = x[0];
      bfr[ni][1] = x[1];
      bfr[ni + 1][0] = x[2];
      bfr[ni + 1][1] = x[3];
    }
#pragma unroll
    for (int mi = 0; mi < Tl::MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < Tl::NI; ++ni) mma_m16n8k16_bf16(acc[mi][ni], af[mi], bfr[ni], acc[mi][ni]);
  }
}

// Stores a lane's two adjacent accumulators (columns n, n + 1 of one row; the second only when `second`) with the
// bias added and, with `accumulate`, the old values: one 4-byte store when `pairs` (bf16, aligned, N even).
template <class T>
__device__ inline void mma_store_pair(T* o, float v0, float v1, const T* bias, bool second, bool pairs,
                                      bool accumulate) {
  if (bias) v0 += to_f(bias[0]);
  if (bias && second) v1 += to_f(bias[1]);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (pairs) {
      auto* o2 = reinterpret_cast<__nv_bfloat162*>(o);
      if (accumulate) {
        const __nv_bfloat162 old = *o2;
        v0 += __low2float(old);
        v1 += __high2float(old);
      }
      *o2 = __floats2bfloat162_rn(v0, v1);
      return;
    }
  }
  if (accumulate) v0 += to_f(o[0]);
  o[0] = from_f<T>(v0);
  if (!second) return;
  if (accumulate) v1 += to_f(o[1]);
  o[1] = from_f<T>(v1);
}

// C (M x N, row-major, M = a.rows, N = b.rows): the ring keeps STAGES - 1 k-tiles in flight; iteration kt waits
// for tile kt, and the barrier after the wait also says every warp is done with the stage the next load refills.
template <class T, class Tl, bool AKC, bool BKC>
__global__ void __launch_bounds__(Tl::threads)
    gemm_mma_kernel(T* c, MmaOperand<T> a, MmaOperand<T> b, const T* bias, int K, bool accumulate) {
  PB_DYNAMIC_SHARED(__nv_bfloat16, smem);
  __nv_bfloat16* as = smem;
  __nv_bfloat16* bs = smem + Tl::STAGES * Tl::a_elems;
  const int m0 = blockIdx.y * Tl::BM, n0 = blockIdx.x * Tl::BN;
  const int warp = threadIdx.x / 32, wm0 = (warp / Tl::WN) * Tl::warp_m, wn0 = (warp % Tl::WN) * Tl::warp_n;
  float acc[Tl::MI][Tl::NI][4] = {};
  AsyncCopies copies;
  auto load_stage = [&](int stage, int kt) {
    mma_load_tile<T, AKC, Tl::BM, Tl::BK, Tl::threads>(as + stage * Tl::a_elems, a, m0, kt * Tl::BK, K, copies);
    mma_load_tile<T, BKC, Tl::BN, Tl::BK, Tl::threads>(bs + stage * Tl::b_elems, b, n0, kt * Tl::BK, K, copies);
  };
  const int ktiles = (K + Tl::BK - 1) / Tl::BK;
  for (int s = 0; s < Tl::STAGES - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    copies.commit();  // empty groups too: the wait below counts groups
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    copies.wait<Tl::STAGES - 2>();
    __syncthreads();
    const int next = kt + Tl::STAGES - 1;
    if (next < ktiles) load_stage(next % Tl::STAGES, next);
    copies.commit();
    const int s = kt % Tl::STAGES;
    mma_stage<Tl, AKC, BKC>(acc, as + s * Tl::a_elems, bs + s * Tl::b_elems, wm0, wn0);
  }
  copies.wait<0>();
  const int M = a.rows, N = b.rows, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool pairs = std::is_same_v<T, __nv_bfloat16> && N % 2 == 0 && reinterpret_cast<std::uintptr_t>(c) % 4 == 0;
#pragma unroll
  for (int mi = 0; mi < Tl::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < Tl::NI; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = m0 + wm0 + mi * 16 + g + 8 * h, n = n0 + wn0 + ni * 8 + 2 * t;
        if (m < M && n < N)
          mma_store_pair(c + std::int64_t(m) * N + n, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1],
                         bias ? bias + n : nullptr, n + 1 < N, pairs, accumulate);
      }
}

// Whether an operand's chunks of 8 along its contiguous dimension (`extent` long, rows `ld` apart) are whole and
// 16-byte aligned, so cp.async can move them.
template <class T>
inline bool mma_vec_ok(const T* p, std::int64_t ld, std::int64_t extent) {
  return sizeof(T) == 2 && ld % 8 == 0 && extent % 8 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <class T, bool AKC, bool BKC, class Tl = MmaTiles128>
void launch_gemm_mma(T* c, MmaOperand<T> a, MmaOperand<T> b, const T* bias, int K, bool accumulate, void* stream) {
  auto* kernel = &gemm_mma_kernel<T, Tl, AKC, BKC>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tl::smem_bytes));
  PB_LAUNCH(kernel, dim3(ceil_div(b.rows, Tl::BN), ceil_div(a.rows, Tl::BM)), dim3(Tl::threads), Tl::smem_bytes,
            stream)(c, a, b, bias, K, accumulate);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
