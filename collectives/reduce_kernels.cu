// Local combine step of the hand-written collectives, as one CUDA kernel source: nvcc builds it for cuda, the simt
// emulator runs the same code on the host. inout[i] = inout[i] op in[i]; avg finishes with a division by n.
#include <cstring>

#include "kernels/simt/cuda_compat.h"

namespace parbench::PB_KERNEL_NS {

#if defined(PB_SIMT)
#define PB_HD
constexpr unsigned kMaxBlocks = 16;  // emulated threads are fibers: fewer blocks, longer grid-stride loops
#else
#define PB_HD __host__ __device__
constexpr unsigned kMaxBlocks = 4096;
#endif
#include "collectives/reduce_elem.inc"
#undef PB_HD

constexpr unsigned kThreads = 256;

template <class E, int OP>
__device__ void combine_range(void* inout, const void* in, unsigned long long n) {
  auto* a = static_cast<typename E::S*>(inout);
  auto* b = static_cast<const typename E::S*>(in);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    a[i] = E::store(combine_values<OP>(E::load(a[i]), E::load(b[i])));
}

template <class E>
__device__ void combine_op(void* inout, const void* in, unsigned long long n, int op) {
  switch (op) {
    case 1: combine_range<E, 1>(inout, in, n); break;
    case 2: combine_range<E, 2>(inout, in, n); break;
    case 3: combine_range<E, 3>(inout, in, n); break;
    default: combine_range<E, 0>(inout, in, n); break;
  }
}

__global__ void reduce_combine_kernel(void* inout, const void* in, unsigned long long n, int dtype, int op) {
  switch (dtype) {
    case 0: combine_op<ElemF64>(inout, in, n, op); break;
    case 1: combine_op<ElemF32>(inout, in, n, op); break;
    case 2: combine_op<ElemF16>(inout, in, n, op); break;
    case 3: combine_op<ElemBF16>(inout, in, n, op); break;
    case 4: combine_op<ElemI32>(inout, in, n, op); break;
    case 5: combine_op<ElemI8>(inout, in, n, op); break;
    default: combine_op<ElemU8>(inout, in, n, op); break;
  }
}

template <class E>
__device__ void divide_range(void* buf, unsigned long long n, int ranks) {
  auto* a = static_cast<typename E::S*>(buf);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    a[i] = E::store(E::load(a[i]) / typename E::C(ranks));
}

__global__ void reduce_divide_kernel(void* buf, unsigned long long n, int dtype, int ranks) {
  switch (dtype) {
    case 0: divide_range<ElemF64>(buf, n, ranks); break;
    case 1: divide_range<ElemF32>(buf, n, ranks); break;
    case 2: divide_range<ElemF16>(buf, n, ranks); break;
    case 3: divide_range<ElemBF16>(buf, n, ranks); break;
    case 4: divide_range<ElemI32>(buf, n, ranks); break;
    case 5: divide_range<ElemI8>(buf, n, ranks); break;
    default: divide_range<ElemU8>(buf, n, ranks); break;
  }
}

static unsigned grid_for(unsigned long long n) {
  unsigned long long blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

void reduce_combine(void* inout, const void* in, unsigned long long n, int dtype, int op, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(reduce_combine_kernel, dim3(grid_for(n)), dim3(kThreads), 0, stream)(inout, in, n, dtype, op);
  PB_CHECK_LAUNCH();
}

void reduce_divide(void* buf, unsigned long long n, int dtype, int ranks, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(reduce_divide_kernel, dim3(grid_for(n)), dim3(kThreads), 0, stream)(buf, n, dtype, ranks);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
