// Mean-squared-error loss (the MLP's), forward and backward: the host half of mse.cu (reference, checks and
// dispatch).
#include <cmath>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// loss[0] = mean((pred - target)^2); dpred = 2 (pred - target) / n * dloss.
template <class T> void mse_forward(acc_t<T>* loss, const T* pred, const T* target, std::int64_t n, void* stream);
template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, std::int64_t n, float dloss, void* stream);
)

namespace parbench::ref {

template <class T>
void mse_forward(acc_t<T>* loss, const T* pred, const T* target, std::int64_t n, void*) {
  acc_t<T> s = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    acc_t<T> d = load(pred[i]) - load(target[i]);
    s += d * d;
  }
  loss[0] = s / acc_t<T>(n);
}

template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, std::int64_t n, float dloss, void*) {
  acc_t<T> f = acc_t<T>(2) * acc_t<T>(dloss) / acc_t<T>(n);
  for (std::int64_t i = 0; i < n; ++i) dpred[i] = store<T>(f * (load(pred[i]) - load(target[i])));
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void mse_forward(Tensor& loss, const Tensor& pred, const Tensor& target, const Stream& s) {
  Op op{"mse_forward", s};
  DType d = op.storage(pred, "pred");
  op.like({{target, "target"}}, d, pred.numel());
  op.like({{loss, "loss"}}, acc_dtype(d), 1);
  PB_DISPATCH(op, d, mse_forward, loss.ptr<Acc<T>>(), pred.ptr<T>(), target.ptr<T>(), pred.numel());
}

void mse_backward(Tensor& dpred, const Tensor& pred, const Tensor& target, float dloss, const Stream& s) {
  Op op{"mse_backward", s};
  DType d = op.storage(pred, "pred");
  op.like({{target, "target"}, {dpred, "dpred"}}, d, pred.numel());
  PB_DISPATCH(op, d, mse_backward, dpred.ptr<T>(), pred.ptr<T>(), target.ptr<T>(), pred.numel(), dloss);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

Work mse_forward_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = std::int64_t(s.B) * s.T * s.C;
  Arg p = c.in(c.dtype(), {n}), y = c.in(c.dtype(), {n}), loss = c.out(c.acc(), {1});
  auto call = [=](int i, const Stream& st) mutable { ops::mse_forward(loss[i], p[i], y[i], st); };
  return Work{call, {loss}, 3.0 * n, 2.0 * n * elem_bytes(c.dtype())}.named(
      {{"pred", p}, {"target", y}, {"loss", loss}});
}

Work mse_backward_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = std::int64_t(s.B) * s.T * s.C;
  Arg p = c.in(c.dtype(), {n}), y = c.in(c.dtype(), {n}), dp = c.out(c.dtype(), {n});
  auto call = [=](int i, const Stream& st) mutable { ops::mse_backward(dp[i], p[i], y[i], 1.f, st); };
  return Work{call, {dp}, 3.0 * n, 3.0 * n * elem_bytes(c.dtype())}.named(
      {{"pred", p}, {"target", y}, {"dpred", dp}}, 1.0);
}

}  // namespace parbench::optable
