// Launchers of the tensor-core building-block test kernels (tests/simt/tensor_core_kernels.cu), built for simt
// and, by nvcc, for cuda. Matrices are 16-bit raw bits (bf16 or f16); each launcher runs one warp.
#pragma once
#include <cstdint>

#define PB_TENSOR_CORE_TEST_LAUNCHERS                                                                          \
  /* One mma.sync m16n8k16: a (16x16 row-major), b (16x8 row-major, k by n), c (16x8 fp32) are loaded into      \
     fragments element by element in the ISA's layout (k halves of A swapped when swap_a_k_halves: a planted   \
     layout error); lane_d[4 * lane + i] = lane's D register i, d (16x8) = D stored back through the layout */ \
  void mma_once(float* lane_d, float* d, const std::uint16_t* a, const std::uint16_t* b, const float* c,       \
                bool bf16, bool swap_a_k_halves, void* stream);                                                \
  /* ldmatrix of `n` (1, 2, 4) 8x8 matrices, .trans if `trans`, from a 32x8 shared copy of `tile`; lane l      \
     gives the address of shared row row_of_lane[l]; out[n * lane + j] = lane's register j */                  \
  void ldmatrix_once(std::uint32_t* out, const std::uint16_t* tile, const int* row_of_lane, int n, bool trans,  \
                     void* stream);                                                                            \
  /* 32 threads, each two cp.async groups of 16 bytes from src (group 1 with src_bytes of them, the rest        \
     zero-filled) into shared; seen[t*16 ..]: words 0-3 chunk 0 before any wait, 4-7 chunk 1 after wait<1>,     \
     8-11 chunk 0 after wait<1>, 12-15 chunk 1 after wait<0> */                                                \
  void cp_async_groups(std::uint32_t* seen, const std::uint32_t* src, int src_bytes, void* stream);           \
  /* misuse, for simt's diagnostics (undefined on a GPU): 0 mma with half the warp exited, 1 ldmatrix from a  \
     row address off 16 bytes, 2 cp.async to a destination off 16 bytes */                                    \
  void tensor_core_misuse(int what, void* stream);

namespace parbench::simt_kernels {
PB_TENSOR_CORE_TEST_LAUNCHERS
}
#if defined(PARBENCH_HAVE_CUDA)
namespace parbench::cuda_kernels {
PB_TENSOR_CORE_TEST_LAUNCHERS
}
#endif
