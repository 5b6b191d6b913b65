// Host-side declarations of every kernel launcher, in parbench::simt_kernels (the kernels compiled for
// the simt emulator) and parbench::cuda_kernels (compiled by nvcc, when the build has CUDA).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace parbench::simt_kernels {
#include "kernels/launcher_decls.h"
}  // namespace parbench::simt_kernels

#ifdef PARBENCH_HAVE_CUDA
namespace parbench::cuda_kernels {
#include "kernels/launcher_decls.h"
// The vendor baseline: cuBLAS GEMM at fp32 compute (bf16 inputs for bf16), then add_bias.
template <class T>
void matmul_forward_cublas(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, void* stream);
}  // namespace parbench::cuda_kernels
#endif
