// Launchers of the reduction kernel (reduce_kernels.cu) for the simt emulator and, with CUDA, for the GPU.
// dtype and op are the integer values of parbench::DType and parbench::ReduceOp (the kernel switches on their names).
#pragma once

namespace parbench::simt_kernels {
void reduce_combine(void* out, const void* x, const void* y, unsigned long long n, int dtype, int op, void* stream);
void reduce_divide(void* buf, unsigned long long n, int dtype, int ranks, void* stream);
}  // namespace parbench::simt_kernels

#ifdef PARBENCH_HAVE_CUDA
namespace parbench::cuda_kernels {
void reduce_combine(void* out, const void* x, const void* y, unsigned long long n, int dtype, int op, void* stream);
void reduce_divide(void* buf, unsigned long long n, int dtype, int ranks, void* stream);
}  // namespace parbench::cuda_kernels
#endif
