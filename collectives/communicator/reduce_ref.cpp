// cpu reference of the reduction kernel: the same element rules (reduce_elem.inc) in a plain loop, vectorised
// (`omp simd` with -fopenmp-simd: element-wise, so the results are those of the scalar loop).
#include <cstring>

#include "base/float16.h"
#include "collectives/communicator/reduce.h"

namespace parbench::cpu_ref {

#define PB_HD
#include "collectives/communicator/reduce_elem.inc"
#undef PB_HD

namespace {
template <class E, int OP>
void combine_loop(void* out, const void* x, const void* y, std::size_t n) {
  auto* o = static_cast<typename E::S*>(out);
  auto* a = static_cast<const typename E::S*>(x);
  auto* b = static_cast<const typename E::S*>(y);
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) o[i] = E::store(combine_values<OP>(E::load(a[i]), E::load(b[i])));
}
template <class E>
void combine_op(void* out, const void* x, const void* y, std::size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::prod: return combine_loop<E, 1>(out, x, y, n);
    case ReduceOp::max: return combine_loop<E, 2>(out, x, y, n);
    case ReduceOp::min: return combine_loop<E, 3>(out, x, y, n);
    default: return combine_loop<E, 0>(out, x, y, n);
  }
}
template <class E>
void divide_loop(void* buf, std::size_t n, int ranks) {
  auto* a = static_cast<typename E::S*>(buf);
  for (std::size_t i = 0; i < n; ++i) a[i] = E::store(E::load(a[i]) / typename E::C(ranks));
}
}  // namespace

void reduce_combine(void* out, const void* x, const void* y, std::size_t n, DType t, ReduceOp op) {
  switch (t) {
    case DType::f64: return combine_op<ElemF64>(out, x, y, n, op);
    case DType::f32: return combine_op<ElemF32>(out, x, y, n, op);
    case DType::f16: return combine_op<ElemF16>(out, x, y, n, op);
    case DType::bf16: return combine_op<ElemBF16>(out, x, y, n, op);
    case DType::i32: return combine_op<ElemI32>(out, x, y, n, op);
    case DType::i8: return combine_op<ElemI8>(out, x, y, n, op);
    case DType::u8: return combine_op<ElemU8>(out, x, y, n, op);
  }
}

void reduce_divide(void* buf, std::size_t n, DType t, int ranks) {
  switch (t) {
    case DType::f64: return divide_loop<ElemF64>(buf, n, ranks);
    case DType::f32: return divide_loop<ElemF32>(buf, n, ranks);
    case DType::f16: return divide_loop<ElemF16>(buf, n, ranks);
    case DType::bf16: return divide_loop<ElemBF16>(buf, n, ranks);
    case DType::i32: return divide_loop<ElemI32>(buf, n, ranks);
    case DType::i8: return divide_loop<ElemI8>(buf, n, ranks);
    case DType::u8: return divide_loop<ElemU8>(buf, n, ranks);
  }
}

}  // namespace parbench::cpu_ref
