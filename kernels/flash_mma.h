// The building blocks of the tensor-core flash attention (flash_mma_fwd.h, flash_mma_bwd.h), included by
// flash_attention.cu: bf16 tiles of head rows staged by cp.async into swizzled shared memory (zero rows past T),
// warp products through ldmatrix + mma.sync m16n8k16 (fp32 accumulate), causal masks and the probabilities'
// rounding to bf16 A fragments. A warp owns 16 rows of every product; a block is 4 warps, 64 rows.
#pragma once
#include <cmath>
#include <cstring>
#include <type_traits>

#include "device/kernel_common.h"
#include "device/mma.h"

namespace parbench::PB_KERNEL_NS {

constexpr int kFmWarps = 4, kFmThreads = 32 * kFmWarps, kFmRows = 16 * kFmWarps;
constexpr float kFmLog2e = 1.4426950408889634f;

// Tiles of kFmRows covering n rows (device side).
__device__ inline int fm_tiles(int n) { return (n + kFmRows - 1) / kFmRows; }

// Head sizes the tensor-core path is built for; the rest (and f32) take the scalar flash kernels.
constexpr bool flash_mma_head_size(int hs) { return hs == 64 || hs == 128; }
// launch(std::integral_constant<int, HS>{}) for the one of those that hs is: the kernels' HS is a template argument.
template <class Launch>
void flash_mma_with_head_size(int hs, Launch&& launch) {
  if (hs == 64)
    launch(std::integral_constant<int, 64>{});
  else
    launch(std::integral_constant<int, 128>{});
}

// Copies rows r0 .. r0 + R - 1 (HS bf16 each, rows `ld` elements apart from `src`) into a swizzled [R][HS] tile,
// zero-filling rows at or past T; every thread of the block takes every kFmThreads-th 16-byte chunk.
template <int HS, int R>
__device__ inline void fm_load_rows(__nv_bfloat16* s, const __nv_bfloat16* src, std::int64_t ld, int r0, int T,
                                    AsyncCopies& copies) {
  constexpr int kChunks = HS / 8;
  for (int p = threadIdx.x; p < R * kChunks; p += kFmThreads) {
    const int r = p / kChunks, c = (p % kChunks) * 8;
    const bool in = r0 + r < T;
    copies.copy16(s + swizzle_b16<HS>(r, c), in ? src + (r0 + r) * ld + c : src, in ? 16 : 0);
  }
}

// s (16 x 8NB) = rows a_row0 .. a_row0 + 15 of tile a times the NB * 8 rows of tile b transposed (both swizzled
// [.][HS], the k dimension contiguous): A by ldmatrix x4, two n8 B fragments per ldmatrix x4.
template <int HS, int NB>
__device__ inline void fm_gemm_nt(float (&s)[NB][4], const __nv_bfloat16* a, int a_row0, const __nv_bfloat16* b) {
  static_assert(NB % 2 == 0, "B fragments go in pairs of n8 tiles");
  const int lane = threadIdx.x % 32, j = lane / 8, r = lane % 8;
#pragma unroll
  for (int n = 0; n < NB; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < HS; kk += 16) {
    // Matrices 0..3: (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15).
    std::uint32_t af[4];
    ldmatrix_m8n8<4, false>(af, a + swizzle_b16<HS>(a_row0 + (j % 2) * 8 + r, kk + (j / 2) * 8));
#pragma unroll
    for (int n = 0; n < NB; n += 2) {
      // Matrices 0..3: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
      std::uint32_t x[4];
      ldmatrix_m8n8<4, false>(x, b + swizzle_b16<HS>(n * 8 + (j / 2) * 8 + r, kk + (j % 2) * 8));
      const std::uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
      mma_m16n8k16_bf16(s[n], af, b0, s[n]);
      mma_m16n8k16_bf16(s[n + 1], af, b1, s[n + 1]);
    }
  }
}

// Two floats rounded to a bf16 pair in one register, the first in the low half (an A fragment's layout).
__device__ inline std::uint32_t fm_pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// o (16 x HS) += p (16 x 8NB, accumulator layout, rounded to bf16) times tile b, swizzled [8NB][HS] with the k
// dimension along rows: the accumulators of two n8 tiles are one A fragment; B comes by ldmatrix x4 .trans.
template <int HS, int NB>
__device__ inline void fm_gemm_pv(float (&o)[HS / 8][4], const float (&p)[NB][4], const __nv_bfloat16* b) {
  const int lane = threadIdx.x % 32, j = lane / 8, r = lane % 8;
#pragma unroll
  for (int kk = 0; kk < NB / 2; ++kk) {
    const std::uint32_t af[4] = {fm_pack(p[2 * kk][0], p[2 * kk][1]), fm_pack(p[2 * kk][2], p[2 * kk][3]),
                                 fm_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                                 fm_pack(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int n = 0; n < HS / 8; n += 2) {
      // Matrices 0..3 (rows k, columns n): (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
      std::uint32_t x[4];
      ldmatrix_m8n8<4, true>(x, b + swizzle_b16<HS>(kk * 16 + (j % 2) * 8 + r, n * 8 + (j / 2) * 8));
      const std::uint32_t b0[2] = {x[0], x[1]}, b1[2] = {x[2], x[3]};
      mma_m16n8k16_bf16(o[n], af, b0, o[n]);
      mma_m16n8k16_bf16(o[n + 1], af, b1, o[n + 1]);
    }
  }
}

// Sets to -inf the scores a query may not see: a key after the query or at or past T. Element i of n8 tile n
// is row row0 + 8 (i / 2), column col0 + 8n + 2t + i % 2 of the block's product; rows are queries and columns
// keys, or with KeyRows keys and queries.
template <bool KeyRows, int NB>
__device__ inline void fm_mask(float (&s)[NB][4], int row0, int col0, int T) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int n = 0; n < NB; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + g + 8 * (i / 2), col = col0 + n * 8 + 2 * t + i % 2;
      const int query = KeyRows ? col : row, key = KeyRows ? row : col;
      if (key > query || col >= T) s[n][i] = -INFINITY;
    }
}

// The four bf16 values of one accumulator row pair go out as 4-byte stores: o[n][2h], o[n][2h + 1] (times
// `scale`) at dst + 8n + 2t, for every n8 tile n.
template <int HS>
__device__ inline void fm_store_row(__nv_bfloat16* dst, const float (&o)[HS / 8][4], int h, float scale) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int n = 0; n < HS / 8; ++n)
    *reinterpret_cast<__nv_bfloat162*>(dst + n * 8 + 2 * t) =
        __floats2bfloat162_rn(o[n][2 * h] * scale, o[n][2 * h + 1] * scale);
}

// Sums a value over the quad of lanes that share an accumulator row.
__device__ inline float fm_quad_sum(float v) {
  v += __shfl_xor_sync(kFullMask, v, 1);
  return v + __shfl_xor_sync(kFullMask, v, 2);
}
__device__ inline float fm_quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(kFullMask, v, 1));
  return fmaxf(v, __shfl_xor_sync(kFullMask, v, 2));
}

// Dynamic shared memory beyond the default 48 KiB must be asked for.
template <class K>
inline void fm_allow_smem(K kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace parbench::PB_KERNEL_NS
