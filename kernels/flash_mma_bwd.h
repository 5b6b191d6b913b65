// The tensor-core flash attention backward (FlashAttention-2 style), included by flash_attention.cu. With
// D = rowsum(dO * O) computed first (flash_delta_kernel), two kernels recompute the probabilities P from the saved
// log-sum-exp, without atomics: one per 64 keys walks the query tiles after them (dV += P^T dO, dP^T = V dO^T,
// dS^T = P^T * (dP^T - D), dK += dS^T Q), one per 64 queries walks the key tiles before them (dQ += dS K).
// Streamed tiles are double-buffered through cp.async; all products are mma.sync on bf16 with fp32 accumulators.
// Grouped-query: a dK/dV block owns 64 keys of one kv head and streams the query tiles of every query head of its
// group one head after the other through the same pipeline, so its sums over the group need no atomics and come
// out the same every run; the dQ blocks read their kv head's K/V.
#pragma once
#include "kernels/flash_mma.h"

namespace parbench::PB_KERNEL_NS {

// Query tile of the dK/dV kernel: 32 at head size 128 keeps its accumulators (dK, dV, S^T, dP^T) in registers.
template <int HS>
constexpr int fm_bwd_query_tile() {
  return HS == 128 ? 32 : 64;
}
template <int HS>
constexpr int fm_dkdv_smem() {
  constexpr int NQ = fm_bwd_query_tile<HS>();
  return 2 * kFmRows * HS * 2 + 2 * (2 * NQ * HS * 2 + 2 * NQ * 4);  // K, V; two stages of Q, dO, lse, D
}

// The common arguments: inp (B,T,(NH + 2 KV) HS) = q|k|v heads, dout (B,T,C), lse and delta (B,NH,T), the output
// dinp (inp's shape).
struct FlashMmaGrads {
  __nv_bfloat16* dinp;
  const __nv_bfloat16 *inp, *dout;
  const float *lse, *delta;
  int T, C, NH, KV;
  float scale_log2;
};

// p = exp2(s * scale_log2 - lse_log2) then ds = p * (dp - delta), for one warp's products; masked scores (-inf)
// give 0. Rows of the product are queries (lse and delta per row, in regs) or, with KeyRows, keys (per column,
// from the shared arrays at col0).
template <bool KeyRows, int NB>
__device__ inline void fm_probs_and_dscores(float (&s)[NB][4], float (&dp)[NB][4], const float* lse2,
                                            const float* delta, float scale_log2) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int n = 0; n < NB; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = KeyRows ? n * 8 + 2 * t + i % 2 : i / 2;
      s[n][i] = exp2f(fmaf(s[n][i], scale_log2, -lse2[k]));
      dp[n][i] = s[n][i] * (dp[n][i] - delta[k]);
    }
}

// dK (times the softmax scale) and dV of 64 keys of one kv head per block; step `it` of its loop is query tile
// first + it % per_head of the group's query head it / per_head.
template <int HS>
__global__ void __launch_bounds__(kFmThreads) flash_mma_backward_dkdv_kernel(FlashMmaGrads a) {
  constexpr int NQ = fm_bwd_query_tile<HS>(), kKv = kFmRows * HS, kQt = NQ * HS;
  PB_DYNAMIC_SHARED(__nv_bfloat16, smem);
  __nv_bfloat16 *ks = smem, *vs = ks + kKv, *qs = vs + kKv, *dos = qs + 2 * kQt;
  float *lse_s = reinterpret_cast<float*>(dos + 2 * kQt), *delta_s = lse_s + 2 * NQ;
  const int T = a.T, C = a.C, b = blockIdx.y / a.KV, kvh = blockIdx.y % a.KV, k0 = blockIdx.x * kFmRows;
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, head0 = kvh * (a.NH / a.KV);
  const std::int64_t ld = C + 2 * std::int64_t(a.KV) * HS;
  const __nv_bfloat16* rows = a.inp + std::int64_t(b) * T * ld;
  // Queries before k0 see none of these keys.
  const int first = k0 / NQ, per_head = (T + NQ - 1) / NQ - first, steps = per_head * (a.NH / a.KV);
  AsyncCopies copies;
  auto load_queries = [&](int stage, int it) {
    const int head = head0 + it / per_head, i0 = (first + it % per_head) * NQ;
    const std::int64_t bh = std::int64_t(b) * a.NH + head;
    fm_load_rows<HS, NQ>(qs + stage * kQt, rows + head * HS, ld, i0, T, copies);
    fm_load_rows<HS, NQ>(dos + stage * kQt, a.dout + std::int64_t(b) * T * C + head * HS, C, i0, T, copies);
    for (int r = threadIdx.x; r < NQ; r += kFmThreads) {
      const bool in = i0 + r < T;
      lse_s[stage * NQ + r] = in ? a.lse[bh * T + i0 + r] * kFmLog2e : 0.f;
      delta_s[stage * NQ + r] = in ? a.delta[bh * T + i0 + r] : 0.f;
    }
  };
  fm_load_rows<HS, kFmRows>(ks, rows + C + kvh * HS, ld, k0, T, copies);
  fm_load_rows<HS, kFmRows>(vs, rows + C + (a.KV + kvh) * HS, ld, k0, T, copies);
  load_queries(0, 0);
  copies.commit();
  float dk[HS / 8][4] = {}, dv[HS / 8][4] = {};
  for (int it = 0; it < steps; ++it) {
    copies.wait<0>();
    __syncthreads();  // tile it landed (and its lse, D stored); the stage the next load refills is free
    if (it + 1 < steps) load_queries((it + 1) % 2, it + 1);
    copies.commit();
    const int st = it % 2, i0 = (first + it % per_head) * NQ;
    float s[NQ / 8][4], dp[NQ / 8][4];
    fm_gemm_nt<HS, NQ / 8>(s, ks, warp * 16, qs + st * kQt);  // S^T: rows keys, columns queries
    if (i0 < k0 + kFmRows || i0 + NQ > T) fm_mask<true>(s, k0 + warp * 16, i0, T);
    fm_gemm_nt<HS, NQ / 8>(dp, vs, warp * 16, dos + st * kQt);  // dP^T = V dO^T
    fm_probs_and_dscores<true>(s, dp, lse_s + st * NQ, delta_s + st * NQ, a.scale_log2);
    fm_gemm_pv<HS>(dv, s, dos + st * kQt);
    fm_gemm_pv<HS>(dk, dp, qs + st * kQt);
  }
  copies.wait<0>();
  const float scale = a.scale_log2 / kFmLog2e;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int key = k0 + warp * 16 + g + 8 * h;
    if (key >= T) continue;
    __nv_bfloat16* row = a.dinp + (std::int64_t(b) * T + key) * ld;
    fm_store_row<HS>(row + C + kvh * HS, dk, h, scale);
    fm_store_row<HS>(row + C + (a.KV + kvh) * HS, dv, h, 1.f);
  }
}

// dQ (times the softmax scale) of 64 queries per block; the longest rows start first.
template <int HS>
__global__ void __launch_bounds__(kFmThreads) flash_mma_backward_dq_kernel(FlashMmaGrads a) {
  constexpr int kTile = kFmRows * HS;
  PB_DYNAMIC_SHARED(__nv_bfloat16, smem);
  __nv_bfloat16 *qs = smem, *dos = qs + kTile, *ks = dos + kTile, *vs = ks + 2 * kTile;
  const int T = a.T, C = a.C, bh = blockIdx.y, b = bh / a.NH, head = bh % a.NH;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * kFmRows, warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4;
  const std::int64_t ld = C + 2 * std::int64_t(a.KV) * HS;
  const __nv_bfloat16* base = a.inp + std::int64_t(b) * T * ld + head * HS;
  const __nv_bfloat16* kbase = a.inp + std::int64_t(b) * T * ld + C + head / (a.NH / a.KV) * HS;
  AsyncCopies copies;
  auto load_kv = [&](int stage, int kt) {
    fm_load_rows<HS, kFmRows>(ks + stage * kTile, kbase, ld, kt * kFmRows, T, copies);
    fm_load_rows<HS, kFmRows>(vs + stage * kTile, kbase + a.KV * HS, ld, kt * kFmRows, T, copies);
  };
  fm_load_rows<HS, kFmRows>(qs, base, ld, q0, T, copies);
  fm_load_rows<HS, kFmRows>(dos, a.dout + std::int64_t(b) * T * C + head * HS, C, q0, T, copies);
  load_kv(0, 0);
  copies.commit();
  float lse2[2], delta[2];
  for (int h = 0; h < 2; ++h) {
    const int row = q0 + warp * 16 + g + 8 * h;
    lse2[h] = row < T ? a.lse[std::int64_t(bh) * T + row] * kFmLog2e : 0.f;
    delta[h] = row < T ? a.delta[std::int64_t(bh) * T + row] : 0.f;
  }
  const int ntiles = fm_tiles(min(q0 + kFmRows, T));
  float dq[HS / 8][4] = {};
  for (int kt = 0; kt < ntiles; ++kt) {
    copies.wait<0>();
    __syncthreads();
    if (kt + 1 < ntiles) load_kv((kt + 1) % 2, kt + 1);
    copies.commit();
    const int k0 = kt * kFmRows;
    float s[kFmRows / 8][4], dp[kFmRows / 8][4];
    fm_gemm_nt<HS, kFmRows / 8>(s, qs, warp * 16, ks + (kt % 2) * kTile);
    if (k0 + kFmRows > q0 || k0 + kFmRows > T) fm_mask<false>(s, q0 + warp * 16, k0, T);
    fm_gemm_nt<HS, kFmRows / 8>(dp, dos, warp * 16, vs + (kt % 2) * kTile);  // dP = dO V^T
    fm_probs_and_dscores<false>(s, dp, lse2, delta, a.scale_log2);
    fm_gemm_pv<HS>(dq, dp, ks + (kt % 2) * kTile);
  }
  copies.wait<0>();
  const float scale = a.scale_log2 / kFmLog2e;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = q0 + warp * 16 + g + 8 * h;
    if (row < T) fm_store_row<HS>(a.dinp + (std::int64_t(b) * T + row) * ld + head * HS, dq, h, scale);
  }
}

// dinp from the saved lse and the delta already computed (B,NH,T).
template <int HS>
void launch_flash_mma_backward(__nv_bfloat16* dinp, const float* delta, const __nv_bfloat16* dout,
                               const __nv_bfloat16* inp, const float* lse, int B, int T, int C, int NH, int KV,
                               void* stream) {
  const FlashMmaGrads a{dinp, inp, dout, lse, delta, T, C, NH, KV, kFmLog2e / std::sqrt(float(HS))};
  // dK/dV: a block per 64 keys of a kv head; dQ: a block per 64 queries of a query head.
  const dim3 grid_kv(ceil_div(T, kFmRows), B * KV), grid(ceil_div(T, kFmRows), B * NH);
  constexpr int kSmemKv = fm_dkdv_smem<HS>(), kSmemQ = 6 * kFmRows * HS * 2;  // Q, dO, two stages of K and V
  fm_allow_smem(flash_mma_backward_dkdv_kernel<HS>, kSmemKv);
  PB_LAUNCH(flash_mma_backward_dkdv_kernel<HS>, grid_kv, kFmThreads, kSmemKv, stream)(a);
  PB_CHECK_LAUNCH();
  fm_allow_smem(flash_mma_backward_dq_kernel<HS>, kSmemQ);
  PB_LAUNCH(flash_mma_backward_dq_kernel<HS>, grid, kFmThreads, kSmemQ, stream)(a);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
