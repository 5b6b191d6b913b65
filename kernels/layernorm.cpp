// Layernorm over the last dimension, saving mean and rstd for the backward pass: the host half of layernorm.cu
// (reference, checks and dispatch).
#include <algorithm>
#include <cmath>

#include "kernels/column_partials.h"
#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// out (N,C) = (inp - mean) * rstd * weight + bias per row; saves mean (N) and rstd (N).
template <class T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight, const T* bias, int N,
                       int C, void* stream);
// dinp, dweight, dbias all accumulate (+=), as the residual stream and parameter gradients need; the kernels'
// column sums use `scratch`, column_partials_numel(N, C, 2) floats (the reference ignores it).
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const acc_t<T>* mean, const acc_t<T>* rstd, float* scratch, int N, int C, void* stream);
)

namespace parbench::ref {

template <class T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight, const T* bias, int N,
                       int C, void*) {
  using A = acc_t<T>;
  const A eps = A(1e-5);
  for (int r = 0; r < N; ++r) {
    const T* x = inp + std::int64_t(r) * C;
    A m = 0;
    for (int c = 0; c < C; ++c) m += load(x[c]);
    m /= C;
    A var = 0;
    for (int c = 0; c < C; ++c) var += (load(x[c]) - m) * (load(x[c]) - m);
    var /= C;
    A s = A(1) / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c)
      out[std::int64_t(r) * C + c] = store<T>((load(x[c]) - m) * s * load(weight[c]) + load(bias[c]));
    mean[r] = m;
    rstd[r] = s;
  }
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const acc_t<T>* mean,
                        const acc_t<T>* rstd, float*, int N, int C, void*) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    const T* x = inp + std::int64_t(r) * C;
    const T* d = dout + std::int64_t(r) * C;
    A dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int c = 0; c < C; ++c) {
      A norm = (load(x[c]) - mean[r]) * rstd[r];
      A dnorm = load(weight[c]) * load(d[c]);
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; ++c) {
      A norm = (load(x[c]) - mean[r]) * rstd[r];
      A dnorm = load(weight[c]) * load(d[c]);
      dbias[c] = store<T>(load(dbias[c]) + load(d[c]));
      dweight[c] = store<T>(load(dweight[c]) + norm * load(d[c]));
      T& di = dinp[std::int64_t(r) * C + c];
      di = store<T>(load(di) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[r]);
    }
  }
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void layernorm_forward(Tensor& out, Tensor& mean, Tensor& rstd, const Tensor& inp, const Tensor& weight,
                       const Tensor& bias, const Stream& s) {
  Op op{"layernorm_forward", s};
  DType d = op.storage(out, "out");
  op.dtypes({{inp, "inp"}, {weight, "weight"}, {bias, "bias"}}, d);
  op.dtypes({{mean, "mean"}, {rstd, "rstd"}}, acc_dtype(d));
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.numel(out, "out", inp.numel());
  op.numels({{weight, "weight"}, {bias, "bias"}}, C);
  op.numels({{mean, "mean"}, {rstd, "rstd"}}, N);
  PB_DISPATCH(op, d, layernorm_forward, out.ptr<T>(), mean.ptr<Acc<T>>(), rstd.ptr<Acc<T>>(), inp.ptr<T>(),
              weight.ptr<T>(), bias.ptr<T>(), N, C);
}

void layernorm_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout, const Tensor& inp,
                        const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Stream& s) {
  Op op{"layernorm_backward", s};
  DType d = op.storage(dinp, "dinp");
  op.dtypes({{dweight, "dweight"}, {dbias, "dbias"}, {dout, "dout"}, {inp, "inp"}, {weight, "weight"}}, d);
  op.dtypes({{mean, "mean"}, {rstd, "rstd"}}, acc_dtype(d));
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.numels({{dinp, "dinp"}, {dout, "dout"}}, inp.numel());
  op.numels({{weight, "weight"}, {dweight, "dweight"}, {dbias, "dbias"}}, C);
  op.numels({{mean, "mean"}, {rstd, "rstd"}}, N);
  OpScratch scratch(s, column_partials_numel(N, C, 2));
  PB_DISPATCH(op, d, layernorm_backward, dinp.ptr<T>(), dweight.ptr<T>(), dbias.ptr<T>(), dout.ptr<T>(), inp.ptr<T>(),
              weight.ptr<T>(), mean.ptr<Acc<T>>(), rstd.ptr<Acc<T>>(), scratch.data(), N, C);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

Work layernorm_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), bias = c.in(t, {s.C}), out = c.out(t, {s.B, s.T, s.C}),
      mean = c.out(c.acc(), {s.B, s.T}), rstd = c.out(c.acc(), {s.B, s.T});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable {
    ops::layernorm_forward(out[i], mean[i], rstd[i], inp[i], w[i], bias[i], st);
  };
  return Work{call, {out, mean, rstd}, 8 * n, 3 * n * elem_bytes(t)}.named(
      {{"inp", inp}, {"weight", w}, {"bias", bias}, {"out", out}, {"mean", mean}, {"rstd", rstd}});
}

Work layernorm_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), mean = c.in(c.acc(), {s.B, s.T}, -0.1, 0.1),
      rstd = c.in(c.acc(), {s.B, s.T}, 0.5, 1.5), dout = c.in(t, {s.B, s.T, s.C}), dinp = c.in(t, {s.B, s.T, s.C}),
      dw = c.in(t, {s.C}), db = c.in(t, {s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable {
    ops::layernorm_backward(dinp[i], dw[i], db[i], dout[i], inp[i], w[i], mean[i], rstd[i], st);
  };
  return Work{call, {dinp, dw, db}, 16 * n, 6 * n * elem_bytes(t)}.named({{"inp", inp}, {"weight", w}, {"mean", mean},
      {"rstd", rstd}, {"dout", dout}, {"dinp", dinp}, {"dweight", dw}, {"dbias", db}});
}

}  // namespace parbench::optable
