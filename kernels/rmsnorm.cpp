// RMSNorm over the last dimension, plain and fused with the residual add before it, saving rstd for the backward
// pass: the host half of rmsnorm.cu (reference, checks and dispatch).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/column_partials.h"
#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// out (N,C) = inp * rstd * weight per row, rstd = 1 / sqrt(mean(inp^2) + eps); saves rstd (N).
template <class T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C, double eps, void* stream);
// dinp and dweight accumulate (+=); the kernels' column sum uses `scratch`, column_partials_numel(N, C, 1) floats.
template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const acc_t<T>* rstd,
                      float* scratch, int N, int C, void* stream);
// h (N,C) = inp + residual (rounded to T), then out = rmsnorm(h) as rmsnorm_forward; saves h and rstd (N).
template <class T>
void rmsnorm_residual_forward(T* out, T* h, acc_t<T>* rstd, const T* inp, const T* residual, const T* weight, int N,
                              int C, double eps, void* stream);
// g = dh + rmsnorm's gradient of h; dinp += g, dresidual += g, dweight += as rmsnorm_backward (same scratch).
template <class T>
void rmsnorm_residual_backward(T* dinp, T* dresidual, T* dweight, const T* dh, const T* dout, const T* h,
                               const T* weight, const acc_t<T>* rstd, float* scratch, int N, int C, void* stream);
)

namespace parbench::ref {

namespace {

// One row's rstd, of h stored in T.
template <class T>
acc_t<T> rms_row_rstd(const T* h, int C, double eps) {
  using A = acc_t<T>;
  A ss = 0;
  for (int c = 0; c < C; ++c) ss += load(h[c]) * load(h[c]);
  return A(1) / std::sqrt(ss / C + A(eps));
}

// out = h * rstd * weight per row, h = inp or (where `residual` is given) inp + residual, stored to hout.
template <class T>
void rms_forward_rows(T* out, T* hout, acc_t<T>* rstd, const T* inp, const T* residual, const T* weight, int N,
                      int C, double eps) {
  for (int r = 0; r < N; ++r) {
    const std::int64_t base = std::int64_t(r) * C;
    const T* h = inp + base;
    if (residual) {
      for (int c = 0; c < C; ++c) hout[base + c] = store<T>(load(inp[base + c]) + load(residual[base + c]));
      h = hout + base;
    }
    const acc_t<T> s = rms_row_rstd(h, C, eps);
    for (int c = 0; c < C; ++c) out[base + c] = store<T>(load(h[c]) * s * load(weight[c]));
    rstd[r] = s;
  }
}

// dinp += g (and, where `dh` is given, g + dh into dinp and dres); dweight += norm * dout.
template <class T>
void rms_backward_rows(T* dinp, T* dres, T* dweight, const T* dh, const T* dout, const T* inp, const T* weight,
                       const acc_t<T>* rstd, int N, int C) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    const std::int64_t base = std::int64_t(r) * C;
    A dnorm_norm_mean = 0;
    for (int c = 0; c < C; ++c)
      dnorm_norm_mean += load(weight[c]) * load(dout[base + c]) * load(inp[base + c]) * rstd[r];
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; ++c) {
      const A norm = load(inp[base + c]) * rstd[r], d = load(dout[base + c]);
      A g = (load(weight[c]) * d - norm * dnorm_norm_mean) * rstd[r];
      dweight[c] = store<T>(load(dweight[c]) + norm * d);
      if (dh) {
        g += load(dh[base + c]);
        dres[base + c] = store<T>(load(dres[base + c]) + g);
      }
      dinp[base + c] = store<T>(load(dinp[base + c]) + g);
    }
  }
}

}  // namespace

template <class T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C, double eps, void*) {
  rms_forward_rows<T>(out, nullptr, rstd, inp, nullptr, weight, N, C, eps);
}

template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const acc_t<T>* rstd, float*,
                      int N, int C, void*) {
  rms_backward_rows<T>(dinp, nullptr, dweight, nullptr, dout, inp, weight, rstd, N, C);
}

template <class T>
void rmsnorm_residual_forward(T* out, T* h, acc_t<T>* rstd, const T* inp, const T* residual, const T* weight, int N,
                              int C, double eps, void*) {
  rms_forward_rows<T>(out, h, rstd, inp, residual, weight, N, C, eps);
}

template <class T>
void rmsnorm_residual_backward(T* dinp, T* dresidual, T* dweight, const T* dh, const T* dout, const T* h,
                               const T* weight, const acc_t<T>* rstd, float*, int N, int C, void*) {
  rms_backward_rows<T>(dinp, dresidual, dweight, dh, dout, h, weight, rstd, N, C);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

namespace {

// The rows and channels of an rmsnorm op: C the last dimension of `x`, N its other elements; every other tensor
// of its dtype (rstd of the statistics dtype), weights of C elements, rstd of N.
struct RmsDims {
  int N, C;
};
RmsDims rms_dims(const Op& op, DType d, const Tensor& x, const char* xn, std::initializer_list<Named> like_x,
                 std::initializer_list<Named> weights, const Tensor& rstd) {
  const int C = int(op.last_dim(x, xn));
  const int N = int(x.numel() / std::max(C, 1));
  op.dtypes(like_x, d);
  op.dtypes(weights, d);
  op.dtype(rstd, "rstd", acc_dtype(d));
  op.numels(like_x, x.numel());
  op.numels(weights, C);
  op.numel(rstd, "rstd", N);
  return {N, C};
}

// eps keeps rstd finite on an all-zero row: positive and finite. Returned as written, the float's shortest decimal
// in double (1e-5f is 1e-5), so that the float64 reference adds 1e-5 itself rather than 1e-5f = 9.99999975e-6; the
// kernels round it back to the float.
double checked_eps(const Op& op, float eps) {
  if (eps > 0 && std::isfinite(eps)) {
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits - 1, eps).ptr;
    *end = '\0';
    return std::strtod(digits, nullptr);
  }
  char shown[32];
  std::snprintf(shown, sizeof shown, "%g", double(eps));
  op.fail(std::string("eps=") + shown + " is refused: it must be finite and > 0 (the default is 1e-5)");
}

}  // namespace

void rmsnorm_forward(Tensor& out, Tensor& rstd, const Tensor& inp, const Tensor& weight, const Stream& s,
                     float eps) {
  Op op{"rmsnorm_forward", s};
  DType d = op.storage(out, "out");
  RmsDims n = rms_dims(op, d, inp, "inp", {{inp, "inp"}, {out, "out"}}, {{weight, "weight"}}, rstd);
  const double e = checked_eps(op, eps);
  PB_DISPATCH(op, d, rmsnorm_forward, out.ptr<T>(), rstd.ptr<Acc<T>>(), inp.ptr<T>(), weight.ptr<T>(), n.N, n.C, e);
}

void rmsnorm_backward(Tensor& dinp, Tensor& dweight, const Tensor& dout, const Tensor& inp, const Tensor& weight,
                      const Tensor& rstd, const Stream& s) {
  Op op{"rmsnorm_backward", s};
  DType d = op.storage(dinp, "dinp");
  RmsDims n = rms_dims(op, d, inp, "inp", {{inp, "inp"}, {dout, "dout"}, {dinp, "dinp"}},
                       {{weight, "weight"}, {dweight, "dweight"}}, rstd);
  OpScratch scratch(s, column_partials_numel(n.N, n.C, 1));
  PB_DISPATCH(op, d, rmsnorm_backward, dinp.ptr<T>(), dweight.ptr<T>(), dout.ptr<T>(), inp.ptr<T>(), weight.ptr<T>(),
              rstd.ptr<Acc<T>>(), scratch.data(), n.N, n.C);
}

void rmsnorm_residual_forward(Tensor& out, Tensor& h, Tensor& rstd, const Tensor& inp, const Tensor& residual,
                              const Tensor& weight, const Stream& s, float eps) {
  Op op{"rmsnorm_residual_forward", s};
  DType d = op.storage(out, "out");
  RmsDims n = rms_dims(op, d, inp, "inp", {{inp, "inp"}, {residual, "residual"}, {h, "h"}, {out, "out"}},
                       {{weight, "weight"}}, rstd);
  const double e = checked_eps(op, eps);
  PB_DISPATCH(op, d, rmsnorm_residual_forward, out.ptr<T>(), h.ptr<T>(), rstd.ptr<Acc<T>>(), inp.ptr<T>(),
              residual.ptr<T>(), weight.ptr<T>(), n.N, n.C, e);
}

void rmsnorm_residual_backward(Tensor& dinp, Tensor& dresidual, Tensor& dweight, const Tensor& dh, const Tensor& dout,
                               const Tensor& h, const Tensor& weight, const Tensor& rstd, const Stream& s) {
  Op op{"rmsnorm_residual_backward", s};
  DType d = op.storage(dinp, "dinp");
  RmsDims n = rms_dims(op, d, h, "h",
                       {{h, "h"}, {dh, "dh"}, {dout, "dout"}, {dinp, "dinp"}, {dresidual, "dresidual"}},
                       {{weight, "weight"}, {dweight, "dweight"}}, rstd);
  OpScratch scratch(s, column_partials_numel(n.N, n.C, 1));
  PB_DISPATCH(op, d, rmsnorm_residual_backward, dinp.ptr<T>(), dresidual.ptr<T>(), dweight.ptr<T>(), dh.ptr<T>(),
              dout.ptr<T>(), h.ptr<T>(), weight.ptr<T>(), rstd.ptr<Acc<T>>(), scratch.data(), n.N, n.C);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels. Bytes count each
// kernel's reads and writes of the (B,T,C) tensors: the forward reads inp and writes out (the fused one also reads
// residual and writes h); the backward's row pass reads inp, dout and dinp and writes dinp (the fused one also dh
// and dresidual, read and written), its column pass reads inp and dout again.
namespace parbench::optable {

Work rmsnorm_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), out = c.out(t, {s.B, s.T, s.C}),
      rstd = c.out(c.acc(), {s.B, s.T});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable { ops::rmsnorm_forward(out[i], rstd[i], inp[i], w[i], st); };
  return Work{call, {out, rstd}, 4 * n, 2 * n * elem_bytes(t)}.named(
      {{"inp", inp}, {"weight", w}, {"out", out}, {"rstd", rstd}});
}

Work rmsnorm_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), rstd = c.in(c.acc(), {s.B, s.T}, 0.5, 1.5),
      dout = c.in(t, {s.B, s.T, s.C}), dinp = c.in(t, {s.B, s.T, s.C}), dw = c.in(t, {s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable {
    ops::rmsnorm_backward(dinp[i], dw[i], dout[i], inp[i], w[i], rstd[i], st);
  };
  return Work{call, {dinp, dw}, 10 * n, 6 * n * elem_bytes(t)}.named(
      {{"inp", inp}, {"weight", w}, {"rstd", rstd}, {"dout", dout}, {"dinp", dinp}, {"dweight", dw}});
}

Work rmsnorm_residual_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, s.C}, -2, 2), res = c.in(t, {s.B, s.T, s.C}), w = c.in(t, {s.C}),
      h = c.out(t, {s.B, s.T, s.C}), out = c.out(t, {s.B, s.T, s.C}), rstd = c.out(c.acc(), {s.B, s.T});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable {
    ops::rmsnorm_residual_forward(out[i], h[i], rstd[i], inp[i], res[i], w[i], st);
  };
  return Work{call, {out, h, rstd}, 5 * n, 4 * n * elem_bytes(t)}.named(
      {{"inp", inp}, {"residual", res}, {"weight", w}, {"h", h}, {"out", out}, {"rstd", rstd}});
}

Work rmsnorm_residual_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg h = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), rstd = c.in(c.acc(), {s.B, s.T}, 0.5, 1.5),
      dh = c.in(t, {s.B, s.T, s.C}), dout = c.in(t, {s.B, s.T, s.C}), dinp = c.in(t, {s.B, s.T, s.C}),
      dres = c.in(t, {s.B, s.T, s.C}), dw = c.in(t, {s.C});
  double n = double(s.B) * s.T * s.C;
  auto call = [=](int i, const Stream& st) mutable {
    ops::rmsnorm_residual_backward(dinp[i], dres[i], dw[i], dh[i], dout[i], h[i], w[i], rstd[i], st);
  };
  return Work{call, {dinp, dres, dw}, 12 * n, 9 * n * elem_bytes(t)}.named(
      {{"h", h}, {"weight", w}, {"rstd", rstd}, {"dh", dh}, {"dout", dout}, {"dinp", dinp}, {"dresidual", dres},
       {"dweight", dw}});
}

}  // namespace parbench::optable
