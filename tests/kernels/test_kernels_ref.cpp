// The cpu device's references against straightforward float64 loops (their backward passes against finite
// differences and the checks of bad input are in test_kernels_ref_checks.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/shard_test_util.h"

namespace parbench {
namespace {

using test::at;
using test::CpuOps;
using test::rel_l2;
using V = std::vector<double>;

// ---------------------------------------------------------------- references vs float64 loops
class RefVsF64 : public CpuOps, public ::testing::WithParamInterface<DType> {
 protected:
  DType d = GetParam();
  DType acc = GetParam() == DType::f64 ? DType::f64 : DType::f32;
  // Outputs stored in bf16 are rounded (2^-9 relative); f32 differs by summation order only.
  double tol() const { return d == DType::f64 ? 1e-12 : d == DType::f32 ? 1e-5 : 1e-2; }
  void expect_close(const Tensor& out, const V& want, const char* what) {
    double e = rel_l2(test::to_vector(out), want);
    EXPECT_LE(e, tol()) << what << " dtype " << dtype_name(d);
  }
  const int B = 2, T_ = 7, C = 24, NH = 3, Vocab = 37, OC = 37;
};

TEST_P(RefVsF64, Encoder) {
  Tensor inp = tokens({B, T_}, Vocab), wte = rnd(d, {Vocab, C}), wpe = rnd(d, {T_ + 2, C}), out = poisoned(d, {B, T_, C});
  ops::encoder_forward(out, inp, wte, wpe, s);
  V want(out.numel());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T_; ++t)
      for (int c = 0; c < C; ++c)
        want[(b * T_ + t) * C + c] = at(wte, inp.ptr<std::int32_t>()[b * T_ + t] * C + c) + at(wpe, t * C + c);
  expect_close(out, want, "encoder");
}

TEST_P(RefVsF64, MatmulWithAndWithoutBias) {
  Tensor inp = rnd(d, {B, T_, C}), w = rnd(d, {OC, C}), bias = rnd(d, {OC});
  for (bool with_bias : {true, false}) {
    Tensor out = poisoned(d, {B, T_, OC});
    ops::matmul_forward(out, inp, w, with_bias ? &bias : nullptr, s);
    V want(out.numel());
    for (int m = 0; m < B * T_; ++m)
      for (int o = 0; o < OC; ++o) {
        double x = with_bias ? at(bias, o) : 0;
        for (int c = 0; c < C; ++c) x += at(inp, m * C + c) * at(w, o * C + c);
        want[m * OC + o] = x;
      }
    expect_close(out, want, with_bias ? "matmul+bias" : "matmul");
  }
}

double gelu64(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

TEST_P(RefVsF64, GeluAndBiasGelu) {
  Tensor inp = rnd(d, {B * T_, C}, -4, 4), bias = rnd(d, {C}), out = poisoned(d, {B * T_, C}),
         out2 = poisoned(d, {B * T_, C});
  ops::gelu_forward(out, inp, s);
  ops::bias_gelu_forward(out2, inp, bias, s);
  V want(out.numel()), want2(out.numel());
  for (std::int64_t i = 0; i < inp.numel(); ++i) {
    want[i] = gelu64(at(inp, i));
    want2[i] = gelu64(at(inp, i) + at(bias, i % C));
  }
  expect_close(out, want, "gelu");
  expect_close(out2, want2, "bias_gelu");
}

TEST_P(RefVsF64, Layernorm) {
  Tensor inp = rnd(d, {B, T_, C}, -2, 3), w = rnd(d, {C}), bias = rnd(d, {C}), out = poisoned(d, {B, T_, C});
  Tensor mean = poisoned(acc, {B, T_}), rstd = poisoned(acc, {B, T_});
  ops::layernorm_forward(out, mean, rstd, inp, w, bias, s);
  V want(out.numel()), wm(B * T_), wr(B * T_);
  for (int r = 0; r < B * T_; ++r) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += at(inp, r * C + c) / C;
    for (int c = 0; c < C; ++c) v += (at(inp, r * C + c) - m) * (at(inp, r * C + c) - m) / C;
    wm[r] = m;
    wr[r] = 1 / std::sqrt(v + 1e-5);
    for (int c = 0; c < C; ++c) want[r * C + c] = (at(inp, r * C + c) - m) * wr[r] * at(w, c) + at(bias, c);
  }
  expect_close(out, want, "layernorm out");
  expect_close(mean, wm, "layernorm mean");
  expect_close(rstd, wr, "layernorm rstd");
}

// RMSNorm in float64 over rows of C: y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + 1e-5); its backward adds the
// gradient of x from dy into dx and that of w into dw.
struct Rms64 {
  V y, rstd;
};
Rms64 rmsnorm64(const V& x, const V& w, int C) {
  const std::size_t N = x.size() / std::size_t(C);
  Rms64 o{V(x.size()), V(N)};
  for (std::size_t r = 0; r < N; ++r) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[r * C + c] * x[r * C + c];
    o.rstd[r] = 1 / std::sqrt(ss / C + 1e-5);
    for (int c = 0; c < C; ++c) o.y[r * C + c] = x[r * C + c] * o.rstd[r] * w[c];
  }
  return o;
}
void rmsnorm_backward64(const V& x, const V& rstd, const V& w, const V& dy, int C, V& dx, V& dw) {
  for (std::size_t r = 0; r < rstd.size(); ++r) {
    double a = 0;
    for (int c = 0; c < C; ++c) a += w[c] * dy[r * C + c] * x[r * C + c] * rstd[r] / C;
    for (int c = 0; c < C; ++c) {
      const double norm = x[r * C + c] * rstd[r];
      dx[r * C + c] += (w[c] * dy[r * C + c] - norm * a) * rstd[r];
      dw[c] += norm * dy[r * C + c];
    }
  }
}

// Plain and fused with the residual add before it: the fused h = inp + residual, its backward's gradient (dh plus
// the norm's) added into both branches.
TEST_P(RefVsF64, RmsnormPlainAndFusedWithTheResidual) {
  using test::to_vector;
  Tensor inp = rnd(d, {B, T_, C}, -2, 3), res = rnd(d, {B, T_, C}), w = rnd(d, {C});
  Tensor out = poisoned(d, {B, T_, C}), rstd = poisoned(acc, {B, T_});
  Tensor h = poisoned(d, {B, T_, C}), out2 = poisoned(d, {B, T_, C}), rstd2 = poisoned(acc, {B, T_});
  ops::rmsnorm_forward(out, rstd, inp, w, s);
  ops::rmsnorm_residual_forward(out2, h, rstd2, inp, res, w, s);
  const V x = to_vector(inp), wv = to_vector(w);
  V hv(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) hv[i] = x[i] + at(res, std::int64_t(i));
  const Rms64 want = rmsnorm64(x, wv, C), want2 = rmsnorm64(hv, wv, C);
  expect_close(out, want.y, "rmsnorm out");
  expect_close(rstd, want.rstd, "rmsnorm rstd");
  expect_close(h, hv, "rmsnorm_residual h");
  expect_close(out2, want2.y, "rmsnorm_residual out");
  expect_close(rstd2, want2.rstd, "rmsnorm_residual rstd");

  Tensor dout = rnd(d, {B, T_, C}), dinp = rnd(d, {B, T_, C}), dw = rnd(d, {C});
  V wdx = to_vector(dinp), wdw = to_vector(dw);
  rmsnorm_backward64(x, want.rstd, wv, to_vector(dout), C, wdx, wdw);
  ops::rmsnorm_backward(dinp, dw, dout, inp, w, rstd, s);
  expect_close(dinp, wdx, "rmsnorm dinp (accumulate)");
  expect_close(dw, wdw, "rmsnorm dweight (accumulate)");

  Tensor dh = rnd(d, {B, T_, C}), dx = rnd(d, {B, T_, C}), dr = rnd(d, {B, T_, C}), dw2 = rnd(d, {C});
  V g(x.size(), 0.0), wdw2 = to_vector(dw2), wdx2 = to_vector(dx), wdr2 = to_vector(dr);
  rmsnorm_backward64(to_vector(h), want2.rstd, wv, to_vector(dout), C, g, wdw2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    wdx2[i] += g[i] + at(dh, std::int64_t(i));
    wdr2[i] += g[i] + at(dh, std::int64_t(i));
  }
  ops::rmsnorm_residual_backward(dx, dr, dw2, dh, dout, h, w, rstd2, s);
  expect_close(dx, wdx2, "rmsnorm_residual dinp (accumulate)");
  expect_close(dr, wdr2, "rmsnorm_residual dresidual (accumulate)");
  expect_close(dw2, wdw2, "rmsnorm_residual dweight (accumulate)");
}

TEST_P(RefVsF64, ResidualForwardAndBackward) {
  Tensor a = rnd(d, {B, T_, C}), b = rnd(d, {B, T_, C}), out = poisoned(d, {B, T_, C});
  ops::residual_forward(out, a, b, s);
  V want(out.numel()), wa(out.numel()), wb(out.numel());
  for (std::int64_t i = 0; i < a.numel(); ++i) want[i] = at(a, i) + at(b, i);
  expect_close(out, want, "residual");
  Tensor da = rnd(d, {B, T_, C}), db = rnd(d, {B, T_, C}), dout = rnd(d, {B, T_, C});
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    wa[i] = at(da, i) + at(dout, i);
    wb[i] = at(db, i) + at(dout, i);
  }
  ops::residual_backward(da, db, dout, s);
  expect_close(da, wa, "residual da");
  expect_close(db, wb, "residual db");
}

// Plain softmax attention in float64: out and, per row, probabilities and log-sum-exp.
void attention64(const Tensor& inp, int B, int T_, int C, int NH, V& out, V& att, V& lse) {
  int hs = C / NH;
  out.assign(std::size_t(B) * T_ * C, 0);
  att.assign(std::size_t(B) * NH * T_ * T_, 0);
  lse.assign(std::size_t(B) * NH * T_, 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T_; ++t) {
        V sc(t + 1);
        for (int j = 0; j <= t; ++j) {
          double x = 0;
          for (int i = 0; i < hs; ++i)
            x += at(inp, (b * T_ + t) * 3 * C + h * hs + i) * at(inp, (b * T_ + j) * 3 * C + C + h * hs + i);
          sc[j] = x / std::sqrt(double(hs));
        }
        double mx = *std::max_element(sc.begin(), sc.end()), sum = 0;
        for (double x : sc) sum += std::exp(x - mx);
        lse[(b * NH + h) * T_ + t] = mx + std::log(sum);
        for (int j = 0; j <= t; ++j) {
          double p = std::exp(sc[j] - mx) / sum;
          att[((b * NH + h) * T_ + t) * T_ + j] = p;
          for (int i = 0; i < hs; ++i)
            out[(b * T_ + t) * C + h * hs + i] += p * at(inp, (b * T_ + j) * 3 * C + 2 * C + h * hs + i);
        }
      }
}

TEST_P(RefVsF64, AttentionPlainAndFlash) {
  Tensor inp = rnd(d, {B, T_, 3 * C}, -2, 2);
  Tensor out = poisoned(d, {B, T_, C}), att = poisoned(acc, {B, NH, T_, T_});
  Tensor out2 = poisoned(d, {B, T_, C}), lse = poisoned(acc, {B, NH, T_});
  ops::attention_forward(out, att, inp, NH, s);
  ops::flash_attention_forward(out2, lse, inp, NH, s);
  V wo, wa, wl;
  attention64(inp, B, T_, C, NH, wo, wa, wl);
  expect_close(out, wo, "attention out");
  expect_close(att, wa, "attention att");
  expect_close(out2, wo, "flash out");
  expect_close(lse, wl, "flash lse");
}

TEST_P(RefVsF64, CrossEntropyInPlace) {
  int N = B * T_;
  Tensor logits = rnd(d, {B, T_, Vocab}, -3, 3), targets = tokens({B, T_}, Vocab),
         losses = poisoned(acc, {B, T_});
  V wl(N), wd(logits.numel());
  const double dloss = double(float(1.0 / N));  // the API takes a float
  for (int r = 0; r < N; ++r) {
    double mx = -1e300, sum = 0;
    for (int i = 0; i < Vocab; ++i) mx = std::max(mx, at(logits, r * Vocab + i));
    for (int i = 0; i < Vocab; ++i) sum += std::exp(at(logits, r * Vocab + i) - mx);
    int tgt = targets.ptr<std::int32_t>()[r];
    wl[r] = -(at(logits, r * Vocab + tgt) - mx - std::log(sum));
    for (int i = 0; i < Vocab; ++i)
      wd[r * Vocab + i] = (std::exp(at(logits, r * Vocab + i) - mx) / sum - (i == tgt)) * dloss;
  }
  ops::crossentropy_forward_backward(losses, &logits, logits, targets, float(dloss), s);  // in place
  expect_close(losses, wl, "crossentropy losses");
  expect_close(logits, wd, "crossentropy dlogits");
}

// Vocabulary-parallel embedding on a hand-checked example: the shard holds tokens 2 and 3 of the table.
TEST_P(RefVsF64, EncoderShardHandChecked) {
  auto fill = [](Tensor& t, const V& v) {
    ASSERT_EQ(t.numel(), std::int64_t(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) store_from_double(t.data(), t.dtype(), i, v[i]);
  };
  Tensor inp = make(DType::i32, {2, 2}), wte = make(d, {2, 2}), wpe = make(d, {3, 2});
  const std::int32_t toks[] = {2, 0, 3, 5};
  std::copy(toks, toks + 4, inp.ptr<std::int32_t>());
  fill(wte, {1, 2, 3, 4});
  fill(wpe, {10, 20, 30, 40, 99, 99});
  Tensor out = poisoned(d, {2, 2, 2});
  ops::encoder_forward_shard(out, inp, wte, &wpe, 2, s);
  EXPECT_EQ(test::to_vector(out), V({11, 22, 30, 40, 13, 24, 30, 40}));
  Tensor out2 = poisoned(d, {2, 2, 2});
  ops::encoder_forward_shard(out2, inp, wte, nullptr, 2, s);
  EXPECT_EQ(test::to_vector(out2), V({1, 2, 0, 0, 3, 4, 0, 0}));

  Tensor dout = make(d, {2, 2, 2}), dwte = make(d, {2, 2}), dwpe = make(d, {3, 2});
  fill(dout, {1, 2, 3, 4, 5, 6, 7, 8});
  fill(dwte, {0.5, 0.5, 0.5, 0.5});
  fill(dwpe, {0, 0, 0, 0, 1, 1});
  ops::encoder_backward_shard(dwte, &dwpe, dout, inp, 2, s);
  EXPECT_EQ(test::to_vector(dwte), V({1.5, 2.5, 5.5, 6.5}));
  EXPECT_EQ(test::to_vector(dwpe), V({6, 8, 10, 12, 1, 1}));  // row t=2 untouched
  ops::encoder_backward_shard(dwte, nullptr, dout, inp, 2, s);
  EXPECT_EQ(test::to_vector(dwte), V({2.5, 4.5, 10.5, 12.5}));
}

// Vocabulary-parallel cross-entropy on two hand-derived rows of V=4 split 2 | 2: row 0 = (1, 0 | 0, 0) with
// target 3 (in the second shard), row 1 = (2, -1 | 0.5, 0.5) with target 0 (in the first).
TEST_P(RefVsF64, CrossEntropyShardHandChecked) {
  Tensor x0 = make(d, {2, 2}), x1 = make(d, {2, 2}), targets = make(DType::i32, {2});
  const double v0[] = {1, 0, 2, -1}, v1[] = {0, 0, 0.5, 0.5};
  for (int i = 0; i < 4; ++i) {
    store_from_double(x0.data(), d, std::size_t(i), v0[i]);
    store_from_double(x1.data(), d, std::size_t(i), v1[i]);
  }
  targets.ptr<std::int32_t>()[0] = 3;
  targets.ptr<std::int32_t>()[1] = 0;
  Tensor m0 = poisoned(acc, {2}), m1 = poisoned(acc, {2});
  ops::crossentropy_shard_max(m0, x0, s);
  ops::crossentropy_shard_max(m1, x1, s);
  EXPECT_EQ(test::to_vector(m0), V({1, 2}));
  EXPECT_EQ(test::to_vector(m1), V({0, 0.5}));
  Tensor m = make(acc, {2});  // allreduce(max)
  store_from_double(m.data(), acc, 0, 1);
  store_from_double(m.data(), acc, 1, 2);
  Tensor se0 = poisoned(acc, {2}), se1 = poisoned(acc, {2}), tl0 = poisoned(acc, {2}), tl1 = poisoned(acc, {2});
  ops::crossentropy_shard_sums(se0, tl0, x0, targets, m, 0, s);
  ops::crossentropy_shard_sums(se1, tl1, x1, targets, m, 2, s);
  const double e1 = std::exp(-1.0), e15 = std::exp(-1.5), e3 = std::exp(-3.0);
  expect_close(se0, {1 + e1, 1 + e3}, "sumexp shard 0");
  expect_close(se1, {2 * e1, 2 * e15}, "sumexp shard 1");
  EXPECT_EQ(test::to_vector(tl0), V({0, 2}));  // row 0's target lies in shard 1
  EXPECT_EQ(test::to_vector(tl1), V({0, 0}));  // its logit is 0 there
  const double S0 = 1 + 3 * e1, S1 = 1 + e3 + 2 * e15;
  Tensor se = make(acc, {2}), tl = make(acc, {2});  // allreduce(sum)
  for (int r = 0; r < 2; ++r) {
    store_from_double(se.data(), acc, std::size_t(r), at(se0, r) + at(se1, r));
    store_from_double(tl.data(), acc, std::size_t(r), at(tl0, r) + at(tl1, r));
  }
  Tensor l0 = poisoned(acc, {2}), l1 = poisoned(acc, {2}), d0 = poisoned(d, {2, 2});
  ops::crossentropy_shard_finish(l0, &d0, x0, targets, m, se, tl, 0, 0.5f, s);
  ops::crossentropy_shard_finish(l1, &x1, x1, targets, m, se, tl, 2, 0.5f, s);  // in place
  V want_loss = {std::log(S0) + 1, std::log(S1)};
  expect_close(l0, want_loss, "losses shard 0");
  expect_close(l1, want_loss, "losses shard 1");
  expect_close(d0, {0.5 / S0, 0.5 * e1 / S0, 0.5 * (1 / S1 - 1), 0.5 * e3 / S1}, "dlogits shard 0");
  expect_close(x1, {0.5 * e1 / S0, 0.5 * (e1 / S0 - 1), 0.5 * e15 / S1, 0.5 * e15 / S1}, "dlogits shard 1");
}

// The key property: random (B,T,V) logits split into 2 and 3 column shards, statistics combined as the
// ranks would, give the losses and (concatenated) dlogits of the unsplit op.
TEST_P(RefVsF64, CrossEntropyShardsMatchTheFullRow) {
  const int Vf = 41;
  Tensor logits = rnd(d, {B, T_, Vf}, -4, 4), targets = tokens({B, T_}, Vf);
  Tensor losses = poisoned(acc, {B, T_}), dl = poisoned(d, {B, T_, Vf});
  const float dloss = 1.f / (B * T_);
  ops::crossentropy_forward_backward(losses, &dl, logits, targets, dloss, s);
  for (int parts : {2, 3})
    for (bool in_place : {false, true}) {
      auto got = test::crossentropy_by_shards(alloc, s, logits, targets, test::shard_bounds(Vf, parts), dloss,
                                              in_place);
      for (const Tensor& l : got.losses) expect_close(l, test::to_vector(losses), "sharded losses");
      expect_close(got.dlogits, test::to_vector(dl), "sharded dlogits");
    }
}

// Embedding shards: the outputs summed over the shards (wpe given to one of them) equal the full forward;
// the dwte shards concatenated and the one dwpe equal the full backward, bit for bit (same sum order).
TEST_P(RefVsF64, EncoderShardsSumToTheFullTable) {
  Tensor inp = tokens({B, T_}, Vocab), wte = rnd(d, {Vocab, C}), wpe = rnd(d, {T_ + 1, C}), out = poisoned(d, {B, T_, C});
  ops::encoder_forward(out, inp, wte, wpe, s);
  Tensor dout = rnd(d, {B, T_, C}), dwte = rnd(d, {Vocab, C}), dwpe = rnd(d, {T_ + 1, C});
  Tensor dwte_full = make(d, {Vocab, C}), dwpe_full = make(d, {T_ + 1, C});
  test::copy_into(dwte_full, dwte);
  test::copy_into(dwpe_full, dwpe);
  ops::encoder_backward(dwte_full, dwpe_full, dout, inp, s);
  for (int parts : {2, 3}) {
    std::vector<int> b = test::shard_bounds(Vocab, parts);
    V sum(out.numel(), 0.0);
    Tensor dwte_cat = poisoned(d, {Vocab, C}), dwpe_one = make(d, {T_ + 1, C});
    test::copy_into(dwpe_one, dwpe);
    for (int p = 0; p < parts; ++p) {
      bool last = p == parts - 1;  // the rank that owns the position embedding
      Tensor w = test::take_rows(alloc, wte, b[p], b[p + 1] - b[p]), o = poisoned(d, {B, T_, C});
      ops::encoder_forward_shard(o, inp, w, last ? &wpe : nullptr, b[p], s);
      for (std::int64_t i = 0; i < o.numel(); ++i) sum[i] += at(o, i);
      Tensor dw = test::take_rows(alloc, dwte, b[p], b[p + 1] - b[p]);
      ops::encoder_backward_shard(dw, last ? &dwpe_one : nullptr, dout, inp, b[p], s);
      test::put_rows(dwte_cat, dw, b[p]);
    }
    expect_close(out, sum, "encoder shards summed");
    EXPECT_EQ(test::to_vector(dwte_cat), test::to_vector(dwte_full)) << parts << " shards";
    EXPECT_EQ(test::to_vector(dwpe_one), test::to_vector(dwpe_full)) << parts << " shards";
  }
}

TEST_P(RefVsF64, OptimizersNormClipMse) {
  const int n = 301;
  Tensor p = rnd(d, {n}), g = rnd(d, {n}), m = rnd(acc, {n}, -0.1, 0.1), v = rnd(acc, {n}, 0, 0.1);
  V wp(n), wm(n), wv(n);
  ops::AdamWConfig cfg{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
  const int step = 3;
  for (int i = 0; i < n; ++i) {
    double gi = at(g, i), pi = at(p, i);
    wm[i] = double(cfg.beta1) * at(m, i) + (1 - double(cfg.beta1)) * gi;
    wv[i] = double(cfg.beta2) * at(v, i) + (1 - double(cfg.beta2)) * gi * gi;
    double mh = wm[i] / (1 - std::pow(double(cfg.beta1), step)), vh = wv[i] / (1 - std::pow(double(cfg.beta2), step));
    wp[i] = pi - double(cfg.lr) * (mh / (std::sqrt(vh) + double(cfg.eps)) + double(cfg.weight_decay) * pi);
  }
  ops::adamw_update(p, g, m, v, cfg, step, s);
  expect_close(p, wp, "adamw params");
  expect_close(m, wm, "adamw m");
  expect_close(v, wv, "adamw v");

  Tensor q = rnd(d, {n});
  V wq(n);
  for (int i = 0; i < n; ++i) wq[i] = at(q, i) - double(0.05f) * (at(g, i) + double(0.01f) * at(q, i));
  ops::sgd_update(q, g, 0.05f, 0.01f, s);
  expect_close(q, wq, "sgd");

  Tensor ns = poisoned(acc, {1});
  double sq = 0;
  for (int i = 0; i < n; ++i) sq += at(g, i) * at(g, i);
  ops::norm_squared(ns, g, false, s);
  ops::norm_squared(ns, g, true, s);  // accumulates a second tensor's share
  expect_close(ns, V{2 * sq}, "norm_squared");
  double max_norm = double(float(std::sqrt(sq)));  // below sqrt(2 sq): clipping applies
  V wg(n);
  for (int i = 0; i < n; ++i) wg[i] = at(g, i) * max_norm / std::sqrt(2 * sq);
  ops::clip_by_norm(g, ns, float(max_norm), s);
  expect_close(g, wg, "clip_by_norm");
  V unchanged = test::to_vector(g);
  ops::clip_by_norm(g, ns, float(10 * max_norm), s);  // above the norm: no change
  expect_close(g, unchanged, "clip_by_norm (no clip)");

  Tensor pred = rnd(d, {n}), target = rnd(d, {n}), loss = poisoned(acc, {1}), dpred = poisoned(d, {n});
  double l = 0;
  V wd(n);
  for (int i = 0; i < n; ++i) {
    l += (at(pred, i) - at(target, i)) * (at(pred, i) - at(target, i)) / n;
    wd[i] = 2 * (at(pred, i) - at(target, i)) / n * 0.5;
  }
  ops::mse_forward(loss, pred, target, s);
  ops::mse_backward(dpred, pred, target, 0.5f, s);
  expect_close(loss, V{l}, "mse");
  expect_close(dpred, wd, "mse backward");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RefVsF64, ::testing::Values(DType::f32, DType::bf16, DType::f64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The reference is what every device is checked against, so its long sums must not lose the small terms:
// in float, 1 + 1 + ... stops growing at 2^24 (a real H100's norm_squared of 7M gradients failed its check
// against the float-summed reference, the reference being the wrong side).
TEST_F(CpuOps, NormSquaredOfManyOnesIsExact) {
  const std::int64_t n = (std::int64_t(1) << 24) + (std::int64_t(1) << 20);
  Tensor ones = make(DType::f32, {n}), out = poisoned(DType::f32, {1});
  std::fill_n(ones.ptr<float>(), n, 1.f);
  ops::norm_squared(out, ones, false, s);
  EXPECT_EQ(out.ptr<float>()[0], float(n));
  ops::norm_squared(out, ones, true, s);
  EXPECT_EQ(out.ptr<float>()[0], float(2 * n));
}

TEST_F(CpuOps, ConvertRoundsToNearestEven) {
  Tensor f = rnd(DType::f32, {1000}, -100, 100), h = poisoned(DType::bf16, {1000}), back = poisoned(DType::f32, {1000});
  ops::convert(h, f, s);
  ops::convert(back, h, s);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(h.ptr<bf16>()[i].bits, float_to_bf16(f.ptr<float>()[i]).bits) << i;
    ASSERT_EQ(back.ptr<float>()[i], bf16_to_float(h.ptr<bf16>()[i])) << i;
  }
}

// RMSNorm on known values. A row of one value c: mean(x^2) = c^2, so y = weight * sign(c) / sqrt(1 + 1e-5 / c^2)
// and rstd = 1 / sqrt(c^2 + 1e-5): weight * sign(c) to 3e-5 relative for |c| >= 0.5. The row (1, 3, -5, 1):
// mean(x^2) = 9, rstd = 1 / sqrt(9 + 1e-5), about 1/3; with dout = (1, 0, 0, 0) its gradients are, with eps left
// out, dweight = norm * dout = (1/3, 0, 0, 0) and dinp = rstd * dnorm - x * rstd^3 * sum(dnorm * x) / C =
// (35/108, -1/36, 5/108, -1/108).
TEST_F(CpuOps, RmsnormKnownValues) {
  for (DType d : {DType::f64, DType::f32}) {
    const double tol = d == DType::f64 ? 1e-12 : 1e-6;
    const DType a = d;  // statistics in the storage dtype for f64 and f32 alike
    Tensor x = make(d, {3, 4}), w = make(d, {4}), y = poisoned(d, {3, 4}), rstd = poisoned(a, {3});
    const double rows[] = {-3, 0.5, 2}, wv[] = {1, 2, 0.5, -1};
    for (int i = 0; i < 12; ++i) store_from_double(x.data(), d, std::size_t(i), rows[i / 4]);
    for (int i = 0; i < 4; ++i) store_from_double(w.data(), d, std::size_t(i), wv[i]);
    ops::rmsnorm_forward(y, rstd, x, w, s);
    for (int i = 0; i < 12; ++i) {
      const double c = rows[i / 4], sign = c < 0 ? -1 : 1;
      EXPECT_NEAR(at(y, i), wv[i % 4] * sign / std::sqrt(1 + 1e-5 / (c * c)), tol) << dtype_name(d) << " " << i;
      EXPECT_NEAR(at(y, i), wv[i % 4] * sign, 3e-5 * std::abs(wv[i % 4])) << dtype_name(d) << " " << i;
    }
    for (int r = 0; r < 3; ++r) EXPECT_NEAR(at(rstd, r), 1 / std::sqrt(rows[r] * rows[r] + 1e-5), tol);

    Tensor x1 = make(d, {1, 4}), y1 = poisoned(d, {1, 4}), r1 = poisoned(a, {1});
    const double xv[] = {1, 3, -5, 1};
    for (int i = 0; i < 4; ++i) store_from_double(x1.data(), d, std::size_t(i), xv[i]);
    ops::rmsnorm_forward(y1, r1, x1, w, s);
    const double r = 1 / std::sqrt(9 + 1e-5);
    EXPECT_NEAR(at(r1, 0), r, tol);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(at(y1, i), xv[i] * wv[i] * r, tol) << i;  // (1, 6, -2.5, -1) * r
    Tensor dout = make(d, {1, 4}), dinp = make(d, {1, 4}), dw = make(d, {4});
    for (int i = 0; i < 4; ++i) {
      store_from_double(dout.data(), d, std::size_t(i), i == 0 ? 1 : 0);
      store_from_double(dinp.data(), d, std::size_t(i), 0);
      store_from_double(dw.data(), d, std::size_t(i), 0);
    }
    ops::rmsnorm_backward(dinp, dw, dout, x1, w, r1, s);
    const double by_hand[] = {35.0 / 108, -1.0 / 36, 5.0 / 108, -1.0 / 108};
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(at(dinp, i), (i == 0 ? r : 0) - xv[i] * r * r * r / 4, tol) << dtype_name(d) << " " << i;
      EXPECT_NEAR(at(dinp, i), by_hand[i], 1e-6) << dtype_name(d) << " " << i;
      EXPECT_NEAR(at(dw, i), i == 0 ? 1.0 / 3 : 0, 1e-6) << dtype_name(d) << " " << i;
    }
  }
}

}  // namespace
}  // namespace parbench
