// SwiGLU with the gate and up projections fused: the host half of swiglu.cu (reference, checks and dispatch). A row
// of inp (..., 2F) is gate (F) then up (F); out (..., F) = silu(gate) * up with silu(g) = g / (1 + exp(-g)).
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// out (N,F) = silu(inp[:, :F]) * inp[:, F:] for inp (N,2F).
template <class T> void swiglu_forward(T* out, const T* inp, int N, int F, void* stream);
// dinp (N,2F) = the gradients of gate and up from dout (N,F) (overwrites; dinp may not alias inp or dout).
template <class T> void swiglu_backward(T* dinp, const T* inp, const T* dout, int N, int F, void* stream);
)

namespace parbench::ref {

namespace {

// sigmoid(g) and 1 - sigmoid(g) from exp(-|g|), which cannot overflow (swiglu.cu says why).
template <class A>
struct Sigmoid {
  A s, rest;
};
template <class A>
Sigmoid<A> sigmoid(A g) {
  const A e = std::exp(-std::abs(g));
  const A p = A(1) / (A(1) + e), q = e * p;
  return g >= 0 ? Sigmoid<A>{p, q} : Sigmoid<A>{q, p};
}

}  // namespace

template <class T>
void swiglu_forward(T* out, const T* inp, int N, int F, void*) {
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < F; ++j) {
      const std::int64_t a = std::int64_t(r) * 2 * F + j;
      const acc_t<T> g = load(inp[a]), u = load(inp[a + F]);
      out[std::int64_t(r) * F + j] = store<T>(g * sigmoid(g).s * u);
    }
}

template <class T>
void swiglu_backward(T* dinp, const T* inp, const T* dout, int N, int F, void*) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < F; ++j) {
      const std::int64_t a = std::int64_t(r) * 2 * F + j;
      const A g = load(inp[a]), u = load(inp[a + F]), dy = load(dout[std::int64_t(r) * F + j]);
      const Sigmoid<A> sg = sigmoid(g);
      dinp[a] = store<T>(dy * u * sg.s * (A(1) + g * sg.rest));
      dinp[a + F] = store<T>(dy * g * sg.s);
    }
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

namespace {

// The rows and width of a swiglu op: x (..., 2F) (inp, and dinp of its shape in `like_x`) and y (..., F) (out or
// dout), every tensor of the storage dtype d.
struct SwigluDims {
  int N, F;
};
SwigluDims swiglu_dims(const Op& op, DType d, const Tensor& x, const char* xn, std::initializer_list<Named> like_x,
                       const Tensor& y, const char* yn) {
  op.dtypes(like_x, d);
  op.dtype(y, yn, d);
  const std::int64_t two_f = op.last_dim(x, xn);
  if (two_f % 2 != 0)
    op.fail(std::string(xn) + " has shape " + shape_string(x.shape()) +
            ", whose last dimension is odd: it holds gate then up, F channels each");
  for (const Named& t : like_x) op.shape(t.t, t.name, x.shape());
  Shape want = x.shape();
  want.back() = two_f / 2;
  if (y.shape() != want)
    op.fail(std::string(yn) + " has shape " + shape_string(y.shape()) + ", expected " + shape_string(want) + ": " + yn +
            "'s last dimension is half of " + xn + "'s (gate then up)");
  return {int(y.numel() / std::max<std::int64_t>(want.back(), 1)), int(want.back())};
}

bool storage_overlaps(const Tensor& a, const Tensor& b) {
  const char *pa = static_cast<const char*>(a.data()), *pb = static_cast<const char*>(b.data());
  return a.bytes() > 0 && b.bytes() > 0 && pa < pb + b.bytes() && pb < pa + a.bytes();
}

}  // namespace

void swiglu_forward(Tensor& out, const Tensor& inp, const Stream& s) {
  Op op{"swiglu_forward", s};
  DType d = op.storage(out, "out");
  SwigluDims n = swiglu_dims(op, d, inp, "inp", {{inp, "inp"}}, out, "out");
  if (storage_overlaps(out, inp))
    op.fail("out overlaps inp: one output could land on another's gate or up before that is read");
  PB_DISPATCH(op, d, swiglu_forward, out.ptr<T>(), inp.ptr<T>(), n.N, n.F);
}

void swiglu_backward(Tensor& dinp, const Tensor& inp, const Tensor& dout, const Stream& s) {
  Op op{"swiglu_backward", s};
  DType d = op.storage(dinp, "dinp");
  SwigluDims n = swiglu_dims(op, d, inp, "inp", {{inp, "inp"}, {dinp, "dinp"}}, dout, "dout");
  for (const Named& t : {Named{inp, "inp"}, Named{dout, "dout"}})
    if (storage_overlaps(dinp, t.t))
      op.fail(std::string("dinp overlaps ") + t.name + ": dinp may not alias the inputs");
  PB_DISPATCH(op, d, swiglu_backward, dinp.ptr<T>(), inp.ptr<T>(), dout.ptr<T>(), n.N, n.F);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels: a Llama MLP's
// hidden layer of F = 4C channels (gelu's width), inp (B,T,2F) gate then up. FLOPs per output: the sigmoid 3 (exp,
// add, divide), silu and the product 2; the backward's sigmoid 3, silu 1, dup 1, silu' 4, dgate 2. Bytes: the
// forward reads 2F and writes F per row, the backward reads 2F and F and writes 2F.
namespace parbench::optable {

Work swiglu_forward_workload(OpCase& c, const OpShape& s) {
  const int F = 4 * s.C;
  Arg inp = c.in(c.dtype(), {s.B, s.T, 2 * F}, -6, 6), out = c.out(c.dtype(), {s.B, s.T, F});
  const double n = double(s.B) * s.T * F;
  auto call = [=](int i, const Stream& st) mutable { ops::swiglu_forward(out[i], inp[i], st); };
  return Work{call, {out}, 5 * n, 3 * n * elem_bytes(c.dtype())}.named({{"inp", inp}, {"out", out}});
}

Work swiglu_backward_workload(OpCase& c, const OpShape& s) {
  const int F = 4 * s.C;
  Arg inp = c.in(c.dtype(), {s.B, s.T, 2 * F}, -6, 6), dout = c.in(c.dtype(), {s.B, s.T, F}),
      dinp = c.out(c.dtype(), {s.B, s.T, 2 * F});
  const double n = double(s.B) * s.T * F;
  auto call = [=](int i, const Stream& st) mutable { ops::swiglu_backward(dinp[i], inp[i], dout[i], st); };
  return Work{call, {dinp}, 11 * n, 5 * n * elem_bytes(c.dtype())}.named(
      {{"inp", inp}, {"dout", dout}, {"dinp", dinp}});
}

}  // namespace parbench::optable
