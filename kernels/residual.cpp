// Residual add, forward and backward: the host half of residual.cu (reference, checks and dispatch).

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
template <class T> void residual_forward(T* out, const T* a, const T* b, std::int64_t n, void* stream);
// da += dout, db += dout.
template <class T> void residual_backward(T* da, T* db, const T* dout, std::int64_t n, void* stream);
)

namespace parbench::ref {

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t n, void*) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = store<T>(load(a[i]) + load(b[i]));
}

template <class T>
void residual_backward(T* da, T* db, const T* dout, std::int64_t n, void*) {
  for (std::int64_t i = 0; i < n; ++i) {
    da[i] = store<T>(load(da[i]) + load(dout[i]));
    db[i] = store<T>(load(db[i]) + load(dout[i]));
  }
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void residual_forward(Tensor& out, const Tensor& a, const Tensor& b, const Stream& s) {
  Op op{"residual_forward", s};
  DType d = op.storage(out, "out");
  op.like({{a, "a"}, {b, "b"}, {out, "out"}}, d, a.numel());
  PB_DISPATCH(op, d, residual_forward, out.ptr<T>(), a.ptr<T>(), b.ptr<T>(), a.numel());
}

void residual_backward(Tensor& da, Tensor& db, const Tensor& dout, const Stream& s) {
  Op op{"residual_backward", s};
  DType d = op.storage(dout, "dout");
  op.like({{da, "da"}, {db, "db"}}, d, dout.numel());
  PB_DISPATCH(op, d, residual_backward, da.ptr<T>(), db.ptr<T>(), dout.ptr<T>(), dout.numel());
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

Work residual_forward_workload(OpCase& c, const OpShape& s) {
  Arg a = c.in(c.dtype(), {s.B, s.T, s.C}), b = c.in(c.dtype(), {s.B, s.T, s.C}),
      out = c.out(c.dtype(), {s.B, s.T, s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::residual_forward(out[i], a[i], b[i], st); };
  return Work{call, {out}, n, 3 * n * elem_bytes(c.dtype())}.named({{"a", a}, {"b", b}, {"out", out}});
}

Work residual_backward_workload(OpCase& c, const OpShape& s) {
  Arg da = c.in(c.dtype(), {s.B, s.T, s.C}), db = c.in(c.dtype(), {s.B, s.T, s.C}),
      dout = c.in(c.dtype(), {s.B, s.T, s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::residual_backward(da[i], db[i], dout[i], st); };
  return Work{call, {da, db}, 2 * n, 5 * n * elem_bytes(c.dtype())}.named({{"dout", dout}, {"da", da}, {"db", db}});
}

}  // namespace parbench::optable
