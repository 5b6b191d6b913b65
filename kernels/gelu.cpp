// GELU (tanh form) and fused bias + GELU, forward and backward: the host half of gelu.cu (its reference, and
// the checks and dispatch of the ops on tensors).
#include <algorithm>
#include <vector>

#include "kernels/column_partials.h"
#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
template <class T> void gelu_forward(T* out, const T* inp, std::int64_t n, void* stream);
// dinp = gelu'(inp) * dout (overwrites; dinp may alias dout).
template <class T> void gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, void* stream);
// out (N,C) = gelu(inp + bias[c]).
template <class T> void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C, void* stream);
// dinp = gelu'(inp + bias) * dout (overwrites); dbias (C, nullable) += column sums of dinp, which the kernels take
// in two passes through `scratch`, column_partials_numel(N, C, 1) floats (the reference ignores it).
template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* inp, const T* bias, const T* dout, float* scratch, int N, int C,
                        void* stream);
)

namespace parbench::ref {

template <class T>
void gelu_forward(T* out, const T* inp, std::int64_t n, void*) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = store<T>(gelu(load(inp[i])));
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, void*) {
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = store<T>(gelu_grad(load(inp[i])) * load(dout[i]));
}

template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C, void*) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < C; ++c) {
      std::int64_t i = std::int64_t(r) * C + c;
      out[i] = store<T>(gelu(load(inp[i]) + load(bias[c])));
    }
}

template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* inp, const T* bias, const T* dout, float*, int N, int C, void*) {
  std::vector<acc_t<T>> db(C, 0);
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < C; ++c) {
      std::int64_t i = std::int64_t(r) * C + c;
      acc_t<T> g = gelu_grad(load(inp[i]) + load(bias[c])) * load(dout[i]);
      db[c] += g;
      dinp[i] = store<T>(g);
    }
  if (dbias)
    for (int c = 0; c < C; ++c) dbias[c] = store<T>(load(dbias[c]) + db[c]);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void gelu_forward(Tensor& out, const Tensor& inp, const Stream& s) {
  Op op{"gelu_forward", s};
  DType d = op.storage(out, "out");
  op.like({{inp, "inp"}, {out, "out"}}, d, inp.numel());
  PB_DISPATCH(op, d, gelu_forward, out.ptr<T>(), inp.ptr<T>(), inp.numel());
}

void gelu_backward(Tensor& dinp, const Tensor& inp, const Tensor& dout, const Stream& s) {
  Op op{"gelu_backward", s};
  DType d = op.storage(dinp, "dinp");
  op.like({{inp, "inp"}, {dinp, "dinp"}, {dout, "dout"}}, d, inp.numel());
  PB_DISPATCH(op, d, gelu_backward, dinp.ptr<T>(), inp.ptr<T>(), dout.ptr<T>(), inp.numel());
}

void bias_gelu_forward(Tensor& out, const Tensor& inp, const Tensor& bias, const Stream& s) {
  Op op{"bias_gelu_forward", s};
  DType d = op.storage(out, "out");
  op.like({{inp, "inp"}, {out, "out"}}, d, inp.numel());
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.like({{bias, "bias"}}, d, C);
  PB_DISPATCH(op, d, bias_gelu_forward, out.ptr<T>(), inp.ptr<T>(), bias.ptr<T>(), N, C);
}

void bias_gelu_backward(Tensor& dinp, Tensor* dbias, const Tensor& inp, const Tensor& bias, const Tensor& dout,
                        const Stream& s) {
  Op op{"bias_gelu_backward", s};
  DType d = op.storage(dinp, "dinp");
  op.like({{inp, "inp"}, {dinp, "dinp"}, {dout, "dout"}}, d, inp.numel());
  int C = int(op.last_dim(inp, "inp"));
  int N = int(inp.numel() / std::max(C, 1));
  op.like({{bias, "bias"}}, d, C);
  op.optional(dbias, "dbias", d, C);
  OpScratch scratch(s, dbias ? column_partials_numel(N, C, 1) : 0);
  PB_DISPATCH(op, d, bias_gelu_backward, dinp.ptr<T>(), ptr_or_null<T>(dbias), inp.ptr<T>(), bias.ptr<T>(),
              dout.ptr<T>(), scratch.data(), N, C);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

Work gelu_forward_workload(OpCase& c, const OpShape& s) {
  Arg inp = c.in(c.dtype(), {s.B, s.T, 4 * s.C}, -3, 3), out = c.out(c.dtype(), {s.B, s.T, 4 * s.C});
  double n = 4.0 * s.B * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::gelu_forward(out[i], inp[i], st); };
  return Work{call, {out}, 9 * n, 2 * n * elem_bytes(c.dtype())}.named({{"inp", inp}, {"out", out}});
}

Work gelu_backward_workload(OpCase& c, const OpShape& s) {
  Arg inp = c.in(c.dtype(), {s.B, s.T, 4 * s.C}, -3, 3), dout = c.in(c.dtype(), {s.B, s.T, 4 * s.C}),
      dinp = c.out(c.dtype(), {s.B, s.T, 4 * s.C});
  double n = 4.0 * s.B * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::gelu_backward(dinp[i], inp[i], dout[i], st); };
  return Work{call, {dinp}, 16 * n, 3 * n * elem_bytes(c.dtype())}.named(
      {{"inp", inp}, {"dout", dout}, {"dinp", dinp}});
}

Work bias_gelu_forward_workload(OpCase& c, const OpShape& s) {
  Arg inp = c.in(c.dtype(), {s.B * s.T, 4 * s.C}, -3, 3), bias = c.in(c.dtype(), {4 * s.C}),
      out = c.out(c.dtype(), {s.B * s.T, 4 * s.C});
  double n = 4.0 * s.B * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::bias_gelu_forward(out[i], inp[i], bias[i], st); };
  return Work{call, {out}, 10 * n, 2 * n * elem_bytes(c.dtype())}.named({{"inp", inp}, {"bias", bias}, {"out", out}});
}

Work bias_gelu_backward_workload(OpCase& c, const OpShape& s) {
  Arg inp = c.in(c.dtype(), {s.B * s.T, 4 * s.C}, -3, 3), bias = c.in(c.dtype(), {4 * s.C}),
      dout = c.in(c.dtype(), {s.B * s.T, 4 * s.C}), dinp = c.out(c.dtype(), {s.B * s.T, 4 * s.C}),
      dbias = c.in(c.dtype(), {4 * s.C});
  double n = 4.0 * s.B * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable {
    ops::bias_gelu_backward(dinp[i], &dbias[i], inp[i], bias[i], dout[i], st);
  };
  return Work{call, {dinp, dbias}, 18 * n, 4 * n * elem_bytes(c.dtype())}.named(
      {{"inp", inp}, {"bias", bias}, {"dout", dout}, {"dinp", dinp}, {"dbias", dbias}});
}

}  // namespace parbench::optable
