// Causal multi-head attention, the host half of attention.cu and flash_attention.cu: the references of the plain
// version (probabilities saved) and of the flash-style interface (only the log-sum-exp saved), computed the same
// straightforward way (one file, as they share their row helpers), and the ops' checks and dispatch.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// inp (B,T,3C) holds q, k, v; out (B,T,C); att (B,NH,T,T) saves the softmax probabilities (zero above the
// diagonal). Scores are scaled by 1/sqrt(C/NH).
template <class T>
void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH, void* stream);
// dinp (B,T,3C) is overwritten; scratch (B,NH,T,T) is the kernels' workspace.
template <class T>
void attention_backward(T* dinp, acc_t<T>* scratch, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_,
                        int C, int NH, void* stream);
// The flash-style pair saves only lse (B,NH,T), the log-sum-exp of each scaled score row; the backward's scratch
// is (B,NH,T). Head size C/NH <= 128.
template <class T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH, void* stream);
template <class T>
void flash_attention_backward(T* dinp, acc_t<T>* scratch, const T* dout, const T* inp, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int NH, void* stream);
)

namespace parbench::ref {
namespace {

// Scaled causal scores of query row t for head h, softmaxed into p[0..t]; returns the log-sum-exp.
template <class T>
acc_t<T> softmax_row(acc_t<T>* p, const T* inp, int b, int t, int h, int T_, int C, int NH) {
  using A = acc_t<T>;
  int hs = C / NH;
  A scale = A(1) / std::sqrt(A(hs));
  const T* q = inp + (std::int64_t(b) * T_ + t) * 3 * C + h * hs;
  A mx = -INFINITY;
  for (int t2 = 0; t2 <= t; ++t2) {
    const T* k = inp + (std::int64_t(b) * T_ + t2) * 3 * C + C + h * hs;
    A s = 0;
    for (int i = 0; i < hs; ++i) s += load(q[i]) * load(k[i]);
    p[t2] = s * scale;
    mx = std::max(mx, p[t2]);
  }
  A sum = 0;
  for (int t2 = 0; t2 <= t; ++t2) sum += (p[t2] = std::exp(p[t2] - mx));
  for (int t2 = 0; t2 <= t; ++t2) p[t2] /= sum;
  return mx + std::log(sum);
}

template <class T>
void attention_out(T* out, const acc_t<T>* p, const T* inp, int b, int t, int h, int T_, int C, int NH) {
  int hs = C / NH;
  for (int i = 0; i < hs; ++i) {
    acc_t<T> o = 0;
    for (int t2 = 0; t2 <= t; ++t2) o += p[t2] * load(inp[(std::int64_t(b) * T_ + t2) * 3 * C + 2 * C + h * hs + i]);
    out[(std::int64_t(b) * T_ + t) * C + h * hs + i] = store<T>(o);
  }
}

// Gradient of one query row given its probabilities p and delta = sum_t2 p[t2] * dp[t2] (= dout . out).
// Adds into the float accumulator d (B,T,3C).
template <class T>
void attention_row_backward(acc_t<T>* d, const acc_t<T>* p, const T* dout, const T* inp, int b, int t, int h, int T_,
                            int C, int NH, bool delta_from_p, acc_t<T> delta) {
  using A = acc_t<T>;
  int hs = C / NH;
  A scale = A(1) / std::sqrt(A(hs));
  auto row = [&](int tt) { return (std::int64_t(b) * T_ + tt) * 3 * C + h * hs; };
  const T* q = inp + row(t);
  const T* dO = dout + (std::int64_t(b) * T_ + t) * C + h * hs;
  std::vector<A> dp(t + 1);
  for (int t2 = 0; t2 <= t; ++t2) {
    const T* v = inp + row(t2) + 2 * C;
    A s = 0;
    for (int i = 0; i < hs; ++i) s += load(dO[i]) * load(v[i]);
    dp[t2] = s;
  }
  if (delta_from_p) {
    delta = 0;
    for (int t2 = 0; t2 <= t; ++t2) delta += p[t2] * dp[t2];
  }
  for (int t2 = 0; t2 <= t; ++t2) {
    A ds = p[t2] * (dp[t2] - delta) * scale;
    const T* k = inp + row(t2) + C;
    for (int i = 0; i < hs; ++i) {
      d[row(t) + i] += ds * load(k[i]);
      d[row(t2) + C + i] += ds * load(q[i]);
      d[row(t2) + 2 * C + i] += p[t2] * load(dO[i]);
    }
  }
}

}  // namespace

template <class T>
void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH, void*) {
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        acc_t<T>* p = att + ((std::int64_t(b) * NH + h) * T_ + t) * T_;
        softmax_row(p, inp, b, t, h, T_, C, NH);
        for (int t2 = t + 1; t2 < T_; ++t2) p[t2] = 0;
        attention_out(out, p, inp, b, t, h, T_, C, NH);
      }
}

template <class T>
void attention_backward(T* dinp, acc_t<T>*, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_, int C,
                        int NH, void*) {
  std::vector<acc_t<T>> d(std::size_t(B) * T_ * 3 * C, 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t)
        attention_row_backward(d.data(), att + ((std::int64_t(b) * NH + h) * T_ + t) * T_, dout, inp, b, t, h, T_, C,
                               NH, true, acc_t<T>(0));
  for (std::size_t i = 0; i < d.size(); ++i) dinp[i] = store<T>(d[i]);
}

template <class T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH, void*) {
  std::vector<acc_t<T>> p(T_);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        lse[(std::int64_t(b) * NH + h) * T_ + t] = softmax_row(p.data(), inp, b, t, h, T_, C, NH);
        attention_out(out, p.data(), inp, b, t, h, T_, C, NH);
      }
}

template <class T>
void flash_attention_backward(T* dinp, acc_t<T>*, const T* dout, const T* inp, const T* out, const acc_t<T>* lse,
                              int B, int T_, int C, int NH, void*) {
  using A = acc_t<T>;
  int hs = C / NH;
  A scale = A(1) / std::sqrt(A(hs));
  std::vector<A> d(std::size_t(B) * T_ * 3 * C, 0), p(T_);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        // Probabilities recomputed from the saved log-sum-exp, as the flash kernels do.
        const T* q = inp + (std::int64_t(b) * T_ + t) * 3 * C + h * hs;
        A l = lse[(std::int64_t(b) * NH + h) * T_ + t];
        for (int t2 = 0; t2 <= t; ++t2) {
          const T* k = inp + (std::int64_t(b) * T_ + t2) * 3 * C + C + h * hs;
          A s = 0;
          for (int i = 0; i < hs; ++i) s += load(q[i]) * load(k[i]);
          p[t2] = std::exp(s * scale - l);
        }
        A delta = 0;
        for (int i = 0; i < hs; ++i) {
          std::int64_t o = (std::int64_t(b) * T_ + t) * C + h * hs + i;
          delta += load(dout[o]) * load(out[o]);
        }
        attention_row_backward(d.data(), p.data(), dout, inp, b, t, h, T_, C, NH, false, delta);
      }
  for (std::size_t i = 0; i < d.size(); ++i) dinp[i] = store<T>(d[i]);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

namespace {
// The storage dtype and (B, T, C) of an attention input (B,T,3C).
struct AttnShape {
  DType d;
  int B, T_, C;
};
// The attention ops' common checks: inp (B,T,3C) q|k|v in a storage dtype with NH dividing C, the activation
// `act` (B,T,C) (out, or dout in the backward) in that dtype, and the saved statistics in the statistics dtype:
// att (B,NH,T,T), or lse (B,NH,T) for the flash pair.
AttnShape check_attention(const Op& op, const Tensor& inp, int NH, Named act, Named stats, bool flash) {
  DType d = op.storage(inp, "inp");
  if (inp.rank() != 3 || inp.dim(2) % 3 != 0) op.fail("inp must be (B, T, 3C), got " + shape_string(inp.shape()));
  AttnShape a{d, int(inp.dim(0)), int(inp.dim(1)), int(inp.dim(2) / 3)};
  if (NH <= 0 || a.C % NH != 0)
    op.fail("NH=" + std::to_string(NH) + " does not divide C=" + std::to_string(a.C) + " into heads");
  op.dtype(act.t, act.name, d);
  op.shape(act.t, act.name, {a.B, a.T_, a.C});
  op.dtype(stats.t, stats.name, acc_dtype(d));
  op.shape(stats.t, stats.name, flash ? Shape{a.B, NH, a.T_} : Shape{a.B, NH, a.T_, a.T_});
  return a;
}
// The backward's input gradient (B,T,3C) and its f32 scratch of `scratch_numel` elements.
void check_attention_grad(const Op& op, DType d, const Tensor& inp, const Tensor& dinp, const Tensor& scratch,
                          std::int64_t scratch_numel) {
  op.dtype(dinp, "dinp", d);
  op.shape(dinp, "dinp", inp.shape());
  op.dtype(scratch, "scratch", acc_dtype(d));
  op.numel(scratch, "scratch", scratch_numel);
}
}  // namespace

void attention_forward(Tensor& out, Tensor& att, const Tensor& inp, int NH, const Stream& s) {
  Op op{"attention_forward", s};
  const AttnShape sh = check_attention(op, inp, NH, {out, "out"}, {att, "att"}, false);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C;
  PB_DISPATCH(op, d, attention_forward, out.ptr<T>(), att.ptr<Acc<T>>(), inp.ptr<T>(), B, T_, C, NH);
}

void attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& att,
                        int NH, const Stream& s) {
  Op op{"attention_backward", s};
  const AttnShape sh = check_attention(op, inp, NH, {dout, "dout"}, {att, "att"}, false);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C;
  check_attention_grad(op, d, inp, dinp, scratch, std::int64_t(B) * NH * T_ * T_);
  PB_DISPATCH(op, d, attention_backward, dinp.ptr<T>(), scratch.ptr<Acc<T>>(), dout.ptr<T>(), inp.ptr<T>(),
              att.ptr<Acc<T>>(), B, T_, C, NH);
}

void flash_attention_forward(Tensor& out, Tensor& lse, const Tensor& inp, int NH, const Stream& s) {
  Op op{"flash_attention_forward", s};
  const AttnShape sh = check_attention(op, inp, NH, {out, "out"}, {lse, "lse"}, true);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C;
  PB_DISPATCH(op, d, flash_attention_forward, out.ptr<T>(), lse.ptr<Acc<T>>(), inp.ptr<T>(), B, T_, C, NH);
}

void flash_attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& out,
                              const Tensor& lse, int NH, const Stream& s) {
  Op op{"flash_attention_backward", s};
  const AttnShape sh = check_attention(op, inp, NH, {dout, "dout"}, {lse, "lse"}, true);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C;
  op.dtype(out, "out", d);
  op.shape(out, "out", dout.shape());
  check_attention_grad(op, d, inp, dinp, scratch, std::int64_t(B) * NH * T_);
  PB_DISPATCH(op, d, flash_attention_backward, dinp.ptr<T>(), scratch.ptr<Acc<T>>(), dout.ptr<T>(), inp.ptr<T>(),
              out.ptr<T>(), lse.ptr<Acc<T>>(), B, T_, C, NH);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

// Causal attention work: QK^T and PV over the lower triangle.
static double attn_flops(const OpShape& s) { return 2.0 * 2.0 * s.B * s.NH * (s.T * (s.T + 1.0) / 2) * (s.C / s.NH); }

Work attention_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      att = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
  double io = 4.0 * s.B * s.T * s.C * elem_bytes(t), scores = double(s.B) * s.NH * s.T * s.T * 4;
  auto call = [=](int i, const Stream& st) mutable { ops::attention_forward(out[i], att[i], inp[i], s.NH, st); };
  return Work{call, {out, att}, attn_flops(s), io + 3 * scores}.named({{"inp", inp}, {"out", out}, {"att", att}});
}

Work attention_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      att = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
  Arg dout = c.in(t, {s.B, s.T, s.C}), dinp = c.out(t, {s.B, s.T, 3 * s.C}),
      scratch = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
  // The forward runs once per side (in the check or the warm-up).
  std::vector<char> forward_done(std::size_t(c.sides()), 0);
  double io = 7.0 * s.B * s.T * s.C * elem_bytes(t), scores = double(s.B) * s.NH * s.T * s.T * 4;
  auto call = [=](int i, const Stream& st) mutable {
    if (!forward_done[std::size_t(i)]) ops::attention_forward(out[i], att[i], inp[i], s.NH, st);
    forward_done[std::size_t(i)] = true;
    ops::attention_backward(dinp[i], scratch[i], dout[i], inp[i], att[i], s.NH, st);
  };
  return Work{call, {dinp}, 2 * attn_flops(s), io + 5 * scores}.named(
      {{"inp", inp}, {"dout", dout}, {"dinp", dinp}});
}

Work flash_attention_forward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      lse = c.out(c.acc(), {s.B, s.NH, s.T});
  auto call = [=](int i, const Stream& st) mutable { ops::flash_attention_forward(out[i], lse[i], inp[i], s.NH, st); };
  return Work{call, {out, lse}, attn_flops(s), 4.0 * s.B * s.T * s.C * elem_bytes(t)}.named(
      {{"inp", inp}, {"out", out}, {"lse", lse}});
}

Work flash_attention_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}),
      lse = c.out(c.acc(), {s.B, s.NH, s.T});
  Arg dout = c.in(t, {s.B, s.T, s.C}), dinp = c.out(t, {s.B, s.T, 3 * s.C}), scratch = c.out(c.acc(), {s.B, s.NH, s.T});
  std::vector<char> forward_done(std::size_t(c.sides()), 0);
  auto call = [=](int i, const Stream& st) mutable {
    if (!forward_done[std::size_t(i)]) ops::flash_attention_forward(out[i], lse[i], inp[i], s.NH, st);
    forward_done[std::size_t(i)] = true;
    ops::flash_attention_backward(dinp[i], scratch[i], dout[i], inp[i], out[i], lse[i], s.NH, st);
  };
  return Work{call, {dinp}, 3.5 * attn_flops(s), 12.0 * s.B * s.T * s.C * elem_bytes(t)}.named(
      {{"inp", inp}, {"dout", dout}, {"dinp", dinp}});
}

// The flash pair at the head sizes of the tensor-core kernels: the shape's C split into heads of 64 channels, and
// again into heads of 128 (at least one head each), both run by one call and both checked.
namespace {
struct WideHeads {
  OpShape s64, s128;
};
WideHeads wide_heads(const OpShape& s) {
  OpShape a = s, b = s;
  a.NH = std::max(1, s.C / 64);
  a.C = 64 * a.NH;
  b.NH = std::max(1, s.C / 128);
  b.C = 128 * b.NH;
  return {a, b};
}
// The named tensors of both halves, told apart by "hs64/" and "hs128/".
std::vector<NamedArg> prefixed(const Work& a, const Work& b) {
  std::vector<NamedArg> out;
  for (const NamedArg& x : a.args) out.push_back({"hs64/" + x.name, x.arg});
  for (const NamedArg& x : b.args) out.push_back({"hs128/" + x.name, x.arg});
  return out;
}
}  // namespace

Work flash_attention_fwd_hs64_128_workload(OpCase& c, const OpShape& s) {
  const WideHeads w = wide_heads(s);
  Work a = flash_attention_forward_workload(c, w.s64), b = flash_attention_forward_workload(c, w.s128);
  auto call = [fa = a.call, fb = b.call](int i, const Stream& st) {
    fa(i, st);
    fb(i, st);
  };
  return Work{call, {a.checked[0], a.checked[1], b.checked[0], b.checked[1]}, a.flops + b.flops, a.bytes + b.bytes}
      .named(prefixed(a, b));
}

Work flash_attention_bwd_hs64_128_workload(OpCase& c, const OpShape& s) {
  const WideHeads w = wide_heads(s);
  Work a = flash_attention_backward_workload(c, w.s64), b = flash_attention_backward_workload(c, w.s128);
  auto call = [fa = a.call, fb = b.call](int i, const Stream& st) {
    fa(i, st);
    fb(i, st);
  };
  return Work{call, {a.checked[0], b.checked[0]}, a.flops + b.flops, a.bytes + b.bytes}.named(prefixed(a, b));
}

}  // namespace parbench::optable
