// Causal attention with grouped-query heads, the host half of attention.cu and flash_attention.cu: the references
// of the plain version (probabilities saved) and of the flash-style interface (only the log-sum-exp saved),
// computed the same straightforward way (one file, as they share their row helpers), and the ops' checks and
// dispatch. The op table's workloads are in attention_workloads.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// Grouped-query attention: inp (B,T,(NH + 2 KV) hs) holds per token NH query heads, then KV key heads, then KV
// value heads, hs = C/NH channels each; query head h reads kv head h / (NH / KV). out (B,T,C); att (B,NH,T,T)
// saves the softmax probabilities (zero above the diagonal). Scores are scaled by 1/sqrt(hs).
template <class T>
void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH, int KV, void* stream);
// dinp (inp's shape) is overwritten; scratch (B,NH,T,T) is the kernels' workspace.
template <class T>
void attention_backward(T* dinp, acc_t<T>* scratch, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_,
                        int C, int NH, int KV, void* stream);
// The flash-style pair saves only lse (B,NH,T), the log-sum-exp of each scaled score row; the backward's scratch
// is (B,NH,T). Head size C/NH <= 128.
template <class T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH, int KV,
                             void* stream);
template <class T>
void flash_attention_backward(T* dinp, acc_t<T>* scratch, const T* dout, const T* inp, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int NH, int KV, void* stream);
)

namespace parbench::ref {
namespace {

// Where the heads of one batch row are: q of head h at q(t, h), its kv head's k and v at k(t, h), v(t, h).
struct Heads {
  int b, T_, C, NH, KV, hs;
  std::int64_t ld() const { return C + 2 * std::int64_t(KV) * hs; }
  std::int64_t q(int t, int h) const { return (std::int64_t(b) * T_ + t) * ld() + h * hs; }
  std::int64_t k(int t, int h) const { return (std::int64_t(b) * T_ + t) * ld() + C + h / (NH / KV) * hs; }
  std::int64_t v(int t, int h) const { return k(t, h) + KV * hs; }
  std::int64_t o(int t, int h) const { return (std::int64_t(b) * T_ + t) * C + h * hs; }
};

// Scaled causal scores of query row t for head h, softmaxed into p[0..t]; returns the log-sum-exp.
template <class T>
acc_t<T> softmax_row(acc_t<T>* p, const T* inp, const Heads& H, int t, int h) {
  using A = acc_t<T>;
  A scale = A(1) / std::sqrt(A(H.hs));
  const T* q = inp + H.q(t, h);
  A mx = -INFINITY;
  for (int t2 = 0; t2 <= t; ++t2) {
    const T* k = inp + H.k(t2, h);
    A s = 0;
    for (int i = 0; i < H.hs; ++i) s += load(q[i]) * load(k[i]);
    p[t2] = s * scale;
    mx = std::max(mx, p[t2]);
  }
  A sum = 0;
  for (int t2 = 0; t2 <= t; ++t2) sum += (p[t2] = std::exp(p[t2] - mx));
  for (int t2 = 0; t2 <= t; ++t2) p[t2] /= sum;
  return mx + std::log(sum);
}

template <class T>
void attention_out(T* out, const acc_t<T>* p, const T* inp, const Heads& H, int t, int h) {
  for (int i = 0; i < H.hs; ++i) {
    acc_t<T> o = 0;
    for (int t2 = 0; t2 <= t; ++t2) o += p[t2] * load(inp[H.v(t2, h) + i]);
    out[H.o(t, h) + i] = store<T>(o);
  }
}

// Gradient of one query row given its probabilities p and delta = sum_t2 p[t2] * dp[t2] (= dout . out).
// Adds into the accumulator d (inp's shape): a kv head's dk and dv collect the rows of all its query heads.
template <class T>
void attention_row_backward(acc_t<T>* d, const acc_t<T>* p, const T* dout, const T* inp, const Heads& H, int t, int h,
                            bool delta_from_p, acc_t<T> delta) {
  using A = acc_t<T>;
  const int hs = H.hs;
  A scale = A(1) / std::sqrt(A(hs));
  const T* q = inp + H.q(t, h);
  const T* dO = dout + H.o(t, h);
  std::vector<A> dp(t + 1);
  for (int t2 = 0; t2 <= t; ++t2) {
    const T* v = inp + H.v(t2, h);
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
    const T* k = inp + H.k(t2, h);
    for (int i = 0; i < hs; ++i) {
      d[H.q(t, h) + i] += ds * load(k[i]);
      d[H.k(t2, h) + i] += ds * load(q[i]);
      d[H.v(t2, h) + i] += p[t2] * load(dO[i]);
    }
  }
}

}  // namespace

template <class T>
void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH, int KV, void*) {
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        const Heads H{b, T_, C, NH, KV, C / NH};
        acc_t<T>* p = att + ((std::int64_t(b) * NH + h) * T_ + t) * T_;
        softmax_row(p, inp, H, t, h);
        for (int t2 = t + 1; t2 < T_; ++t2) p[t2] = 0;
        attention_out(out, p, inp, H, t, h);
      }
}

template <class T>
void attention_backward(T* dinp, acc_t<T>*, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_, int C,
                        int NH, int KV, void*) {
  std::vector<acc_t<T>> d(std::size_t(B) * T_ * (C + 2 * std::size_t(KV) * (C / NH)), 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t)
        attention_row_backward(d.data(), att + ((std::int64_t(b) * NH + h) * T_ + t) * T_, dout, inp,
                               Heads{b, T_, C, NH, KV, C / NH}, t, h, true, acc_t<T>(0));
  for (std::size_t i = 0; i < d.size(); ++i) dinp[i] = store<T>(d[i]);
}

template <class T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH, int KV, void*) {
  std::vector<acc_t<T>> p(T_);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        const Heads H{b, T_, C, NH, KV, C / NH};
        lse[(std::int64_t(b) * NH + h) * T_ + t] = softmax_row(p.data(), inp, H, t, h);
        attention_out(out, p.data(), inp, H, t, h);
      }
}

template <class T>
void flash_attention_backward(T* dinp, acc_t<T>*, const T* dout, const T* inp, const T* out, const acc_t<T>* lse,
                              int B, int T_, int C, int NH, int KV, void*) {
  using A = acc_t<T>;
  int hs = C / NH;
  A scale = A(1) / std::sqrt(A(hs));
  std::vector<A> d(std::size_t(B) * T_ * (C + 2 * std::size_t(KV) * hs), 0), p(T_);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        // Probabilities recomputed from the saved log-sum-exp, as the flash kernels do.
        const Heads H{b, T_, C, NH, KV, hs};
        const T* q = inp + H.q(t, h);
        A l = lse[(std::int64_t(b) * NH + h) * T_ + t];
        for (int t2 = 0; t2 <= t; ++t2) {
          const T* k = inp + H.k(t2, h);
          A s = 0;
          for (int i = 0; i < hs; ++i) s += load(q[i]) * load(k[i]);
          p[t2] = std::exp(s * scale - l);
        }
        A delta = 0;
        for (int i = 0; i < hs; ++i) delta += load(dout[H.o(t, h) + i]) * load(out[H.o(t, h) + i]);
        attention_row_backward(d.data(), p.data(), dout, inp, H, t, h, false, delta);
      }
  for (std::size_t i = 0; i < d.size(); ++i) dinp[i] = store<T>(d[i]);
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

namespace {
// The storage dtype, (B, T, C) and the kv heads of an attention call.
struct AttnShape {
  DType d;
  int B, T_, C, KV;
};
// The attention ops' common checks: the activation `act` (B,T,C) (out, or dout in the backward) fixes hs = C/NH;
// inp (B,T,(NH + 2 KV) hs) in the same storage dtype, with KV kv heads dividing NH; the saved statistics in the
// statistics dtype: att (B,NH,T,T), or lse (B,NH,T) for the flash pair.
AttnShape check_attention(const Op& op, const Tensor& inp, int NH, Named act, Named stats, bool flash) {
  DType d = op.storage(inp, "inp");
  if (inp.rank() != 3) op.fail("inp must be (B, T, (NH + 2 KV) hs), got " + shape_string(inp.shape()));
  if (act.t.rank() != 3)
    op.fail(std::string(act.name) + " must be (B, T, C), got " + shape_string(act.t.shape()));
  const int B = int(inp.dim(0)), T_ = int(inp.dim(1)), C = int(act.t.dim(2));
  if (NH <= 0 || C % NH != 0)
    op.fail("NH=" + std::to_string(NH) + " does not divide C=" + std::to_string(C) + " into heads");
  const std::int64_t hs = C / NH, kv2 = inp.dim(2) - C;
  const std::int64_t KV = hs > 0 && kv2 > 0 && kv2 % (2 * hs) == 0 ? kv2 / (2 * hs) : 0;
  if (KV <= 0 || NH % KV != 0)
    op.fail("inp " + shape_string(inp.shape()) + " does not fit " + act.name + " " + shape_string(act.t.shape()) +
            " with NH=" + std::to_string(NH) + ": inp must be (B, T, (NH + 2 KV) hs) with hs = C/NH = " +
            std::to_string(hs) + " and KV kv heads dividing NH (KV = NH: (B, T, 3C))");
  op.dtype(act.t, act.name, d);
  op.shape(act.t, act.name, {B, T_, C});
  op.dtype(stats.t, stats.name, acc_dtype(d));
  op.shape(stats.t, stats.name, flash ? Shape{B, NH, T_} : Shape{B, NH, T_, T_});
  return AttnShape{d, B, T_, C, int(KV)};
}
// The backward's input gradient (inp's shape) and its f32 scratch of `scratch_numel` elements.
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
  const int B = sh.B, T_ = sh.T_, C = sh.C, KV = sh.KV;
  PB_DISPATCH(op, d, attention_forward, out.ptr<T>(), att.ptr<Acc<T>>(), inp.ptr<T>(), B, T_, C, NH, KV);
}

void attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& att,
                        int NH, const Stream& s) {
  Op op{"attention_backward", s};
  const AttnShape sh = check_attention(op, inp, NH, {dout, "dout"}, {att, "att"}, false);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C, KV = sh.KV;
  check_attention_grad(op, d, inp, dinp, scratch, std::int64_t(B) * NH * T_ * T_);
  PB_DISPATCH(op, d, attention_backward, dinp.ptr<T>(), scratch.ptr<Acc<T>>(), dout.ptr<T>(), inp.ptr<T>(),
              att.ptr<Acc<T>>(), B, T_, C, NH, KV);
}

void flash_attention_forward(Tensor& out, Tensor& lse, const Tensor& inp, int NH, const Stream& s) {
  Op op{"flash_attention_forward", s};
  const AttnShape sh = check_attention(op, inp, NH, {out, "out"}, {lse, "lse"}, true);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C, KV = sh.KV;
  PB_DISPATCH(op, d, flash_attention_forward, out.ptr<T>(), lse.ptr<Acc<T>>(), inp.ptr<T>(), B, T_, C, NH, KV);
}

void flash_attention_backward(Tensor& dinp, Tensor& scratch, const Tensor& dout, const Tensor& inp, const Tensor& out,
                              const Tensor& lse, int NH, const Stream& s) {
  Op op{"flash_attention_backward", s};
  const AttnShape sh = check_attention(op, inp, NH, {dout, "dout"}, {lse, "lse"}, true);
  const DType d = sh.d;
  const int B = sh.B, T_ = sh.T_, C = sh.C, KV = sh.KV;
  op.dtype(out, "out", d);
  op.shape(out, "out", dout.shape());
  check_attention_grad(op, d, inp, dinp, scratch, std::int64_t(B) * NH * T_);
  PB_DISPATCH(op, d, flash_attention_backward, dinp.ptr<T>(), scratch.ptr<Acc<T>>(), dout.ptr<T>(), inp.ptr<T>(),
              out.ptr<T>(), lse.ptr<Acc<T>>(), B, T_, C, NH, KV);
}

}  // namespace parbench::ops
