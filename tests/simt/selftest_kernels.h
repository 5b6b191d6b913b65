// Launchers of the simt self-test kernels (tests/simt/selftest_kernels.cu), built for simt and cuda.
// All run synchronously on simt; on cuda they are asynchronous on `stream`.
#pragma once
#include <cstddef>
#include <cstdint>

#define PB_SIMT_SELFTEST_LAUNCHERS                                                                             \
  /* out[b] = sum of in[b*block .. ] over block b: shared-memory tree with barriers in a loop */             \
  void block_sum(int* out, const int* in, int n, int block, void* stream);                                 \
  /* threads t >= active return at once; the rest exchange through shared memory after a barrier.        \
     out[t] = in[active-1-t] for t < active, counts[0] = __syncthreads_count(odd inputs) */                  \
  void early_exit(int* out, int* counts, const int* in, int block, int active, void* stream);              \
  /* per block of `block` threads: out[i] = in[i of the mirrored index] through PB_DYNAMIC_SHARED */          \
  void dynamic_reverse(float* out, const float* in, int n, int block, void* stream);                       \
  /* out[4*t + k] for k = idx, up, down, xor of in[t] with the given lane, delta, mask and width */           \
  void shuffle_variants(int* out, const int* in, int n, int src_lane, unsigned delta, int lane_mask,       \
                        int width, void* stream);                                                          \
  /* 32 threads: shfl_down by `delta` of a float, a double, a bf16 and a half */                            \
  void shuffle_types(float* f_out, double* d_out, std::uint16_t* bf_out, std::uint16_t* h_out,              \
                     const float* f_in, const double* d_in, const std::uint16_t* bf_in,                     \
                     const std::uint16_t* h_in, unsigned delta, void* stream);                              \
  /* lanes in `mask` vote: out[4*t] = ballot, [4t+1] = any, [4t+2] = all, [4t+3] = __reduce_max_sync,    \
     sums[t] = __reduce_add_sync, match[t] = __match_any_sync(pred % 3); meanwhile the lanes outside       \
     write out[4*t] = __ballot_sync(~mask) and -7 elsewhere */                                             \
  void vote(unsigned* out, unsigned* sums, unsigned* match, const int* pred, int block, unsigned mask,     \
            void* stream);                                                                                 \
  /* every thread of every block: counters ints[0] += 1, ints[1] max, ints[2] min, ints[3] CAS-increment,   \
     uints[0] += vals, floats[0] += 1, doubles[0] += vals, ints[4] exch */                                   \
  void atomics(int* ints, unsigned* uints, float* floats, double* doubles, const int* vals, int blocks,     \
               int block, void* stream);                                                                   \
  /* C (m x n, fp32) = A (m x k, row-major bf16) * B (k x n bf16, row- or column-major); m, n, k % 16 == 0 */ \
  void wmma_gemm_bf16(float* c, const std::uint16_t* a, const std::uint16_t* b, int m, int n, int k,       \
                      bool b_col_major, void* stream);                                                     \
  /* out[t] = in[t+1] read from shared memory WITHOUT a barrier (a bug on purpose) */                       \
  void missing_barrier(int* out, const int* in, int block, void* stream);                                  \
  /* threads below 16 and the rest wait at two different __syncthreads (a bug on purpose) */                \
  void divergent_barrier(int* out, void* stream);                                                          \
  /* lane 0 waits in a shuffle while lanes 1..31 wait at a barrier (a bug on purpose) */                     \
  void deadlock(int* out, void* stream);                                                                   \
  /* a kernel using `smem` bytes of dynamic shared memory, optionally raising the 48 KiB limit first */     \
  void big_shared(float* out, int bx, int by, int bz, std::size_t smem, int grid_y, bool opt_in,       \
                  void* stream);                                                                            \
  int big_shared_opt_in(int bytes); /* cudaFuncSetAttribute's result, as an int */                          \
  /* micro-benchmarks: every thread passes `iters` barriers / does `iters` xor-shuffles */                  \
  void barrier_loop(int* out, int blocks, int block, int iters, void* stream);                             \
  void shuffle_loop(int* out, int blocks, int block, int iters, void* stream);

namespace parbench::simt_kernels {
PB_SIMT_SELFTEST_LAUNCHERS
// Recursion deep enough to overflow any fiber stack (simt only: nvcc cannot size such a stack).
void stack_overflow(int* out, int depth, void* stream);
// Thread 3 of each block launches another kernel, which simt refuses with an exception that
// reaches the host (simt only: device-side launches need relocatable device code under nvcc).
void nested_launch(int* out, int blocks, void* stream);
}  // namespace parbench::simt_kernels
#ifdef PARBENCH_HAVE_CUDA
namespace parbench::cuda_kernels {
PB_SIMT_SELFTEST_LAUNCHERS
}  // namespace parbench::cuda_kernels
#endif
#undef PB_SIMT_SELFTEST_LAUNCHERS
