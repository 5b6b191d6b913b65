// Local combine step of the hand-written collectives, as one CUDA kernel source: nvcc builds it for cuda, the simt
// emulator runs the same code on the host. out[i] = x[i] op y[i]; avg finishes with a division by n.
#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "base/float16.h"
#include "collectives/table/types.h"
#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

#if defined(PB_SIMT)
#define PB_HD
constexpr unsigned kMaxBlocks = 16;  // emulated threads are fibers: fewer blocks, longer grid-stride loops
#else
#define PB_HD __host__ __device__
constexpr unsigned kMaxBlocks = 4096;
#endif
#include "collectives/communicator/reduce_elem.inc"
#undef PB_HD

constexpr unsigned kThreads = 256;

template <class E, int OP>
__device__ void combine_range(void* out, const void* x, const void* y, unsigned long long n) {
  auto* o = static_cast<typename E::S*>(out);
  auto* a = static_cast<const typename E::S*>(x);
  auto* b = static_cast<const typename E::S*>(y);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    o[i] = E::store(combine_values<OP>(E::load(a[i]), E::load(b[i])));
}

// combine_values (reduce_elem.inc) numbers the ops as ReduceOp does: a reordered ReduceOp must stop the build here
// instead of combining with the wrong operation.
static_assert(int(ReduceOp::sum) == 0 && int(ReduceOp::prod) == 1 && int(ReduceOp::max) == 2 &&
              int(ReduceOp::min) == 3);

template <class E>
__device__ void combine_op(void* out, const void* x, const void* y, unsigned long long n, ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: combine_range<E, int(ReduceOp::prod)>(out, x, y, n); break;
    case ReduceOp::max: combine_range<E, int(ReduceOp::max)>(out, x, y, n); break;
    case ReduceOp::min: combine_range<E, int(ReduceOp::min)>(out, x, y, n); break;
    default: combine_range<E, int(ReduceOp::sum)>(out, x, y, n); break;  // sum, and avg before its division
  }
}

// The element type by DType's names, not its order; reduce.cpp passes the dtype of a checked buffer.
__global__ void reduce_combine_kernel(void* out, const void* x, const void* y, unsigned long long n, int dtype,
                                      int op) {
  ReduceOp o = ReduceOp(op);
  switch (DType(dtype)) {
    case DType::f64: combine_op<ElemF64>(out, x, y, n, o); break;
    case DType::f32: combine_op<ElemF32>(out, x, y, n, o); break;
    case DType::f16: combine_op<ElemF16>(out, x, y, n, o); break;
    case DType::bf16: combine_op<ElemBF16>(out, x, y, n, o); break;
    case DType::i32: combine_op<ElemI32>(out, x, y, n, o); break;
    case DType::i8: combine_op<ElemI8>(out, x, y, n, o); break;
    case DType::u8: combine_op<ElemU8>(out, x, y, n, o); break;
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
  switch (DType(dtype)) {
    case DType::f64: divide_range<ElemF64>(buf, n, ranks); break;
    case DType::f32: divide_range<ElemF32>(buf, n, ranks); break;
    case DType::f16: divide_range<ElemF16>(buf, n, ranks); break;
    case DType::bf16: divide_range<ElemBF16>(buf, n, ranks); break;
    case DType::i32: divide_range<ElemI32>(buf, n, ranks); break;
    case DType::i8: divide_range<ElemI8>(buf, n, ranks); break;
    case DType::u8: divide_range<ElemU8>(buf, n, ranks); break;
  }
}

// The kernels' grid for a grid-stride loop (kernel_common.h), capped lower for the emulator's fibers.
static unsigned blocks_for(unsigned long long n) { return std::min(grid_for(std::int64_t(n), kThreads), kMaxBlocks); }

void reduce_combine(void* out, const void* x, const void* y, unsigned long long n, int dtype, int op, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(reduce_combine_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, stream)(out, x, y, n, dtype, op);
  PB_CHECK_LAUNCH();
}

void reduce_divide(void* buf, unsigned long long n, int dtype, int ranks, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(reduce_divide_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, stream)(buf, n, dtype, ranks);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
