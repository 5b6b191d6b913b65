// Column sums of an (N, C) row-major input in two passes, for the parameter gradients of layernorm, of a bias
// and of a fused bias-GeLU: one pass over all of the input with enough blocks to fill a GPU, whatever C is, and a
// short one over fp32 partials. Deterministic: every sum is taken in a fixed order, no atomics.
//
// Pass 1: block b sums rows [b R, (b + 1) R) of every column (threads stride over the columns, so each row is
// read coalesced) into partials[s][b][c] for each of the S sums. Pass 2: a block of 32 columns x 8 row-block
// strides adds the partials of its columns and folds the 8 strides in order.
#pragma once
#include "kernels/column_partials.h"
#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

constexpr int kColumnPartialThreads = 256;

// Terms: `static constexpr int sums` and `__device__ void add(int row, int col, float* s) const`, adding the
// row's contribution of column col to each of s[0..sums).
template <class Terms>
__global__ void column_partials_kernel(float* partials, Terms terms, int N, int C, int rows_per_block) {
  constexpr int S = Terms::sums;
  int r0 = blockIdx.x * rows_per_block, r1 = min(N, r0 + rows_per_block);
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float s[S] = {};
    for (int r = r0; r < r1; ++r) terms.add(r, c, s);
#pragma unroll
    for (int k = 0; k < S; ++k) partials[(std::int64_t(k) * gridDim.x + blockIdx.x) * C + c] = s[k];
  }
}

// out_k[c] (+)= sum over the P row blocks of partials[k][.][c], for k = blockIdx.y (out0 or out1).
template <class T>
__global__ void column_partials_finish_kernel(T* out0, T* out1, const float* partials, int P, int C,
                                              bool accumulate) {
  __shared__ float strides[8][33];
  int k = blockIdx.y, x = threadIdx.x, y = threadIdx.y;
  int c = blockIdx.x * 32 + x;
  const float* part = partials + std::int64_t(k) * P * C;
  float s = 0.f;
  if (c < C)
    for (int p = y; p < P; p += 8) s += part[std::int64_t(p) * C + c];
  strides[y][x] = s;
  __syncthreads();
  if (y != 0 || c >= C) return;
  T* out = k == 0 ? out0 : out1;
  float t = accumulate ? to_f(out[c]) : 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) t += strides[i][x];
  out[c] = from_f<T>(t);
}

// Runs both passes: outs[k] (+)= column sum k of Terms over N rows of C columns; `partials` holds
// column_partials_numel(N, C, Terms::sums) floats. D is the device storage type of the outputs.
template <class D, class Terms>
void column_sums(D* out0, D* out1, const Terms& terms, int N, int C, bool accumulate, float* partials,
                 void* stream) {
  if (C == 0) return;
  int rows = column_rows_per_block(N), blocks = column_row_blocks(N);
  int threads = std::min(kColumnPartialThreads, (C + 31) / 32 * 32);
  PB_LAUNCH(column_partials_kernel<Terms>, blocks, threads, 0, stream)(partials, terms, N, C, rows);
  PB_CHECK_LAUNCH();
  PB_LAUNCH(column_partials_finish_kernel<D>, dim3(ceil_div(C, 32), Terms::sums), dim3(32, 8), 0, stream)
  (out0, out1, partials, blocks, C, accumulate);
  PB_CHECK_LAUNCH();
}

// The plain column sum of an (N, C) input.
template <class T>
struct PlainColumnTerms {
  static constexpr int sums = 1;
  const T* in;
  int C;
  __device__ void add(int r, int c, float* s) const { s[0] += to_f(in[std::int64_t(r) * C + c]); }
};

template <class D>
void column_sum(D* out, const D* in, int N, int C, bool accumulate, float* partials, void* stream) {
  column_sums(out, static_cast<D*>(nullptr), PlainColumnTerms<D>{in, C}, N, C, accumulate, partials, stream);
}

}  // namespace parbench::PB_KERNEL_NS
