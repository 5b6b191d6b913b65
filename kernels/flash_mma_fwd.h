// The tensor-core flash attention forward (FlashAttention-2 style), included by flash_attention.cu: a block per 64
// queries of one head (4 warps x 16 rows), K/V tiles of 64 keys double-buffered through cp.async into swizzled
// shared memory, S = Q K^T and O += P V on mma.sync with an online softmax in registers, tiles above the
// diagonal skipped and the diagonal one masked; O and the log-sum-exp (for the backward) written at the end.
// Grouped-query: a query head's K/V tiles come from its kv head's channels of inp.
#pragma once
#include "kernels/flash_mma.h"

namespace parbench::PB_KERNEL_NS {

// Rescales a warp's running output and sums by the new row maxima and turns the scores s into probabilities
// (unnormalised, exp2 of the scaled score less the scaled maximum). Element pairs 2h, 2h + 1 are row g + 8h;
// m is the row maximum of the raw scores, l this lane's part of the row sum.
template <int HS, int NB>
__device__ inline void fm_online_softmax(float (&s)[NB][4], float (&m)[2], float (&l)[2], float (&o)[HS / 8][4],
                                         float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = m[h];
#pragma unroll
    for (int n = 0; n < NB; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
    mx = fm_quad_max(mx);  // finite: every tile a row visits holds a key it sees
    const float corr = exp2f((m[h] - mx) * scale_log2), shift = mx * scale_log2;
    m[h] = mx;
    l[h] *= corr;
#pragma unroll
    for (int n = 0; n < HS / 8; ++n) {
      o[n][2 * h] *= corr;
      o[n][2 * h + 1] *= corr;
    }
#pragma unroll
    for (int n = 0; n < NB; ++n)
#pragma unroll
      for (int i = 2 * h; i < 2 * h + 2; ++i) {
        s[n][i] = exp2f(fmaf(s[n][i], scale_log2, -shift));
        l[h] += s[n][i];
      }
  }
}

// out (B,T,C) and lse (B,NH,T) from inp (B,T,(NH + 2 KV) HS) = NH query heads | KV key heads | KV value heads;
// scale_log2 = log2(e) / sqrt(HS). Blocks of the longest rows (the last queries) start first.
template <int HS>
__global__ void __launch_bounds__(kFmThreads, 1)
    flash_mma_forward_kernel(__nv_bfloat16* out, float* lse, const __nv_bfloat16* inp, int T, int C, int NH, int KV,
                             float scale_log2) {
  PB_DYNAMIC_SHARED(__nv_bfloat16, smem);
  constexpr int kTile = kFmRows * HS;
  __nv_bfloat16 *qs = smem, *ks = qs + kTile, *vs = ks + 2 * kTile;
  const int bh = blockIdx.y, b = bh / NH, head = bh % NH;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kFmRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4;
  const std::int64_t ld = C + 2 * std::int64_t(KV) * HS;
  const __nv_bfloat16* base = inp + std::int64_t(b) * T * ld + head * HS;
  const __nv_bfloat16* kbase = inp + std::int64_t(b) * T * ld + C + head / (NH / KV) * HS;
  AsyncCopies copies;
  auto load_kv = [&](int stage, int kt) {
    fm_load_rows<HS, kFmRows>(ks + stage * kTile, kbase, ld, kt * kFmRows, T, copies);
    fm_load_rows<HS, kFmRows>(vs + stage * kTile, kbase + KV * HS, ld, kt * kFmRows, T, copies);
  };
  fm_load_rows<HS, kFmRows>(qs, base, ld, q0, T, copies);
  load_kv(0, 0);
  copies.commit();
  // The keys these queries see: [0, min(q0 + 64, T)).
  const int ntiles = fm_tiles(min(q0 + kFmRows, T));
  float o[HS / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  for (int kt = 0; kt < ntiles; ++kt) {
    copies.wait<0>();
    __syncthreads();  // tile kt landed for all; every warp is done with the stage the next load refills
    if (kt + 1 < ntiles) load_kv((kt + 1) % 2, kt + 1);
    copies.commit();
    const int k0 = kt * kFmRows;
    float s[kFmRows / 8][4];
    fm_gemm_nt<HS, kFmRows / 8>(s, qs, warp * 16, ks + (kt % 2) * kTile);
    if (k0 + kFmRows > q0 || k0 + kFmRows > T) fm_mask<false>(s, q0 + warp * 16, k0, T);
    fm_online_softmax<HS>(s, m, l, o, scale_log2);
    fm_gemm_pv<HS>(o, s, vs + (kt % 2) * kTile);
  }
  copies.wait<0>();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = fm_quad_sum(l[h]);
    const int row = q0 + warp * 16 + g + 8 * h;
    if (row >= T) continue;
    fm_store_row<HS>(out + (std::int64_t(b) * T + row) * C + head * HS, o, h, 1.f / sum);
    if (lane % 4 == 0) lse[std::int64_t(bh) * T + row] = m[h] * (scale_log2 / kFmLog2e) + logf(sum);
  }
}

template <int HS>
void launch_flash_mma_forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* inp, int B, int T, int C, int NH,
                              int KV, void* stream) {
  constexpr int kSmem = 5 * kFmRows * HS * 2;  // Q, and two stages of K and V
  fm_allow_smem(flash_mma_forward_kernel<HS>, kSmem);
  PB_LAUNCH(flash_mma_forward_kernel<HS>, dim3(ceil_div(T, kFmRows), B * NH), kFmThreads, kSmem, stream)
  (out, lse, inp, T, C, NH, KV, kFmLog2e / std::sqrt(float(HS)));
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
