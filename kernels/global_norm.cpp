// Gradient norm (sum of squares) and clipping by the global norm: the host half of global_norm.cu (reference,
// checks and dispatch).
#include <cmath>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// out[0] (+)= sum of squares of x.
template <class T> void norm_squared(acc_t<T>* out, const T* x, std::int64_t n, bool accumulate, void* stream);
// x *= max_norm / norm when norm = sqrt(norm_sq[0]) exceeds max_norm.
template <class T> void clip_by_norm(T* x, std::int64_t n, const acc_t<T>* norm_sq, float max_norm, void* stream);
)

namespace parbench::ref {

template <class T>
void norm_squared(acc_t<T>* out, const T* x, std::int64_t n, bool accumulate, void*) {
  // Summed in double whatever T is: a float running sum of millions of squares loses the small terms (past
  // 2^24, adding 1 changes nothing), and the reference is what the kernels are checked against.
  double s = accumulate ? double(out[0]) : 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += double(load(x[i])) * double(load(x[i]));
  out[0] = acc_t<T>(s);
}

template <class T>
void clip_by_norm(T* x, std::int64_t n, const acc_t<T>* norm_sq, float max_norm, void*) {
  acc_t<T> scale = acc_t<T>(clip_scale(std::sqrt(double(norm_sq[0])), max_norm));
  if (scale == acc_t<T>(1)) return;
  for (std::int64_t i = 0; i < n; ++i) x[i] = store<T>(load(x[i]) * scale);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void norm_squared(Tensor& out, const Tensor& x, bool accumulate, const Stream& s) {
  Op op{"norm_squared", s};
  DType d = op.storage(x, "x");
  op.like({{out, "out"}}, acc_dtype(d), 1);
  PB_DISPATCH(op, d, norm_squared, out.ptr<Acc<T>>(), x.ptr<T>(), x.numel(), accumulate);
}

void clip_by_norm(Tensor& x, const Tensor& norm_sq, float max_norm, const Stream& s) {
  Op op{"clip_by_norm", s};
  DType d = op.storage(x, "x");
  op.like({{norm_sq, "norm_sq"}}, acc_dtype(d), 1);
  if (!(max_norm > 0)) op.fail("max_norm " + std::to_string(max_norm) + " must be positive");
  PB_DISPATCH(op, d, clip_by_norm, x.ptr<T>(), x.numel(), norm_sq.ptr<Acc<T>>(), max_norm);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

// Over one transformer block's parameters (12 C^2).
Work norm_squared_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = 12LL * s.C * s.C;
  Arg g = c.in(c.dtype(), {n}), out = c.out(c.acc(), {1});
  auto call = [=](int i, const Stream& st) mutable { ops::norm_squared(out[i], g[i], false, st); };
  return Work{call, {out}, 2.0 * n, double(n) * elem_bytes(c.dtype())};
}

Work clip_by_norm_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = 12LL * s.C * s.C;
  Arg g = c.in(c.dtype(), {n}), ns = c.in(c.acc(), {1}, 4, 5);
  auto call = [=](int i, const Stream& st) mutable { ops::clip_by_norm(g[i], ns[i], 1.f, st); };
  return Work{call, {g}, 1.0 * n, 2.0 * n * elem_bytes(c.dtype())};
}

}  // namespace parbench::optable
