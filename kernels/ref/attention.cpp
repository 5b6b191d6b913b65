// Reference causal multi-head attention: the plain version (probabilities saved) and the
// flash-style interface (only the log-sum-exp saved), computed the same straightforward way.
#include <cmath>
#include <vector>

#include "kernels/ref/ref.h"

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
void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH) {
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
void attention_backward(T* dinp, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_, int C, int NH) {
  std::vector<acc_t<T>> d(std::size_t(B) * T_ * 3 * C, 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t)
        attention_row_backward(d.data(), att + ((std::int64_t(b) * NH + h) * T_ + t) * T_, dout, inp, b, t, h, T_, C,
                               NH, true, acc_t<T>(0));
  for (std::size_t i = 0; i < d.size(); ++i) dinp[i] = store<T>(d[i]);
}

template <class T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH) {
  std::vector<acc_t<T>> p(T_);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        lse[(std::int64_t(b) * NH + h) * T_ + t] = softmax_row(p.data(), inp, b, t, h, T_, C, NH);
        attention_out(out, p.data(), inp, b, t, h, T_, C, NH);
      }
}

template <class T>
void flash_attention_backward(T* dinp, const T* dout, const T* inp, const T* out, const acc_t<T>* lse, int B, int T_,
                              int C, int NH) {
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

#define PB_INSTANTIATE(T)                                                                                   \
  template void attention_forward<T>(T*, acc_t<T>*, const T*, int, int, int, int);                          \
  template void attention_backward<T>(T*, const T*, const T*, const acc_t<T>*, int, int, int, int);         \
  template void flash_attention_forward<T>(T*, acc_t<T>*, const T*, int, int, int, int);                    \
  template void flash_attention_backward<T>(T*, const T*, const T*, const T*, const acc_t<T>*, int, int, int, int);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
