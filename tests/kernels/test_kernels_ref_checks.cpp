// The cpu device's backward passes against finite differences in float64, and the dispatch API's checks of bad
// input (each error names the op and the bad value).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "base/error.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench {
namespace {

using V = std::vector<double>;
using test::at;
using test::CpuOps;

// ---------------------------------------------------------------- backward vs finite differences (f64)
class FiniteDiff : public CpuOps {
 protected:
  const int B = 2, T_ = 5, C = 8, NH = 2, Vocab = 11, OC = 6;
  // Central differences of loss() with respect to every element of x, compared with `grad`.
  void check(const char* what, Tensor& x, const Tensor& grad, const std::function<double()>& loss, double tol = 1e-7) {
    const double h = 1e-5;
    V fd(x.numel());
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      double& xi = x.ptr<double>()[i];
      double keep = xi;
      xi = keep + h;
      double lp = loss();
      xi = keep - h;
      double lm = loss();
      xi = keep;
      fd[i] = (lp - lm) / (2 * h);
    }
    EXPECT_LE(test::rel_l2(test::to_vector(grad), fd), tol) << what;
  }
  // sum_i w_i out_i: the scalar whose gradient with respect to out is w.
  static double dot(const Tensor& w, const Tensor& out) {
    double s = 0;
    for (std::int64_t i = 0; i < out.numel(); ++i) s += at(w, i) * at(out, i);
    return s;
  }
  Tensor zeros(Shape shape) {
    Tensor t = make(DType::f64, std::move(shape));
    std::fill_n(t.ptr<double>(), t.numel(), 0.0);
    return t;
  }
  static constexpr DType F = DType::f64;
};

TEST_F(FiniteDiff, Encoder) {
  Tensor inp = tokens({B, T_}, Vocab), wte = rnd(F, {Vocab, C}), wpe = rnd(F, {T_, C}), out = make(F, {B, T_, C});
  Tensor dout = rnd(F, {B, T_, C}), dwte = zeros({Vocab, C}), dwpe = zeros({T_, C});
  ops::encoder_backward(dwte, dwpe, dout, inp, s);
  auto loss = [&] {
    ops::encoder_forward(out, inp, wte, wpe, s);
    return dot(dout, out);
  };
  check("encoder dwte", wte, dwte, loss);
  check("encoder dwpe", wpe, dwpe, loss);
}

TEST_F(FiniteDiff, Matmul) {
  Tensor inp = rnd(F, {B, T_, C}), w = rnd(F, {OC, C}), bias = rnd(F, {OC}), out = make(F, {B, T_, OC});
  Tensor dout = rnd(F, {B, T_, OC}), dinp = make(F, {B, T_, C}), dw = make(F, {OC, C}), db = make(F, {OC});
  test::fill_nan(dinp);
  test::fill_nan(dw);
  test::fill_nan(db);
  ops::matmul_backward(&dinp, &dw, &db, dout, inp, w, false, s);
  auto loss = [&] {
    ops::matmul_forward(out, inp, w, &bias, s);
    return dot(dout, out);
  };
  check("matmul dinp", inp, dinp, loss);
  check("matmul dweight", w, dw, loss);
  check("matmul dbias", bias, db, loss);
  // accumulate adds the same gradient again
  ops::matmul_backward(&dinp, &dw, &db, dout, inp, w, true, s);
  for (std::int64_t i = 0; i < db.numel(); ++i) db.ptr<double>()[i] /= 2;
  check("matmul dbias accumulated twice / 2", bias, db, loss);
}

TEST_F(FiniteDiff, GeluAndBiasGelu) {
  Tensor inp = rnd(F, {B * T_, C}, -3, 3), bias = rnd(F, {C}), out = make(F, {B * T_, C}), dout = rnd(F, {B * T_, C});
  Tensor dinp = make(F, {B * T_, C}), dinp2 = make(F, {B * T_, C}), dbias = zeros({C});
  ops::gelu_backward(dinp, inp, dout, s);
  check("gelu dinp", inp, dinp, [&] {
    ops::gelu_forward(out, inp, s);
    return dot(dout, out);
  });
  ops::bias_gelu_backward(dinp2, &dbias, inp, bias, dout, s);
  auto loss = [&] {
    ops::bias_gelu_forward(out, inp, bias, s);
    return dot(dout, out);
  };
  check("bias_gelu dinp", inp, dinp2, loss);
  check("bias_gelu dbias", bias, dbias, loss);
}

TEST_F(FiniteDiff, Layernorm) {
  Tensor inp = rnd(F, {B, T_, C}, -2, 2), w = rnd(F, {C}), bias = rnd(F, {C}), out = make(F, {B, T_, C});
  Tensor mean = make(F, {B, T_}), rstd = make(F, {B, T_}), dout = rnd(F, {B, T_, C});
  Tensor dinp = zeros({B, T_, C}), dw = zeros({C}), db = zeros({C});
  ops::layernorm_forward(out, mean, rstd, inp, w, bias, s);
  ops::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, s);
  auto loss = [&] {
    Tensor m2 = make(F, {B, T_}), r2 = make(F, {B, T_});
    ops::layernorm_forward(out, m2, r2, inp, w, bias, s);
    return dot(dout, out);
  };
  check("layernorm dinp", inp, dinp, loss);
  check("layernorm dweight", w, dw, loss);
  check("layernorm dbias", bias, db, loss);
}

TEST_F(FiniteDiff, AttentionPlainAndFlash) {
  Tensor inp = rnd(F, {B, T_, 3 * C}, -1.5, 1.5), out = make(F, {B, T_, C}), att = make(F, {B, NH, T_, T_});
  Tensor lse = make(F, {B, NH, T_}), dout = rnd(F, {B, T_, C});
  Tensor dinp = poisoned(F, {B, T_, 3 * C}), dinp2 = poisoned(F, {B, T_, 3 * C});
  Tensor scratch = make(F, {B, NH, T_, T_}), scratch2 = make(F, {B, NH, T_});
  ops::attention_forward(out, att, inp, NH, s);
  ops::attention_backward(dinp, scratch, dout, inp, att, NH, s);
  ops::flash_attention_forward(out, lse, inp, NH, s);
  ops::flash_attention_backward(dinp2, scratch2, dout, inp, out, lse, NH, s);
  Tensor o2 = make(F, {B, T_, C}), a2 = make(F, {B, NH, T_, T_});
  auto loss = [&] {
    ops::attention_forward(o2, a2, inp, NH, s);
    return dot(dout, o2);
  };
  check("attention dinp", inp, dinp, loss);
  check("flash attention dinp", inp, dinp2, loss);
}

TEST_F(FiniteDiff, CrossEntropyAndMse) {
  Tensor logits = rnd(F, {B * T_, Vocab}, -2, 2), targets = tokens({B * T_}, Vocab), losses = make(F, {B * T_});
  Tensor dlogits = poisoned(F, {B * T_, Vocab});
  const double dloss = double(float(1.0 / (B * T_)));
  ops::crossentropy_forward_backward(losses, &dlogits, logits, targets, float(dloss), s);
  check("crossentropy dlogits", logits, dlogits, [&] {
    ops::crossentropy_forward_backward(losses, nullptr, logits, targets, 0.f, s);
    double l = 0;
    for (int i = 0; i < B * T_; ++i) l += losses.ptr<double>()[i] * dloss;
    return l;
  });
  Tensor pred = rnd(F, {37}), target = rnd(F, {37}), loss = make(F, {1}), dpred = poisoned(F, {37});
  ops::mse_backward(dpred, pred, target, 1.f, s);
  check("mse dpred", pred, dpred, [&] {
    ops::mse_forward(loss, pred, target, s);
    return loss.ptr<double>()[0];
  });
}

// ---------------------------------------------------------------- bad input
TEST_F(CpuOps, BadInputIsRejectedWithItsName) {
  using ::testing::HasSubstr;
  Tensor inp = rnd(DType::f32, {4, 6}), w = rnd(DType::f32, {5, 7}), out = make(DType::f32, {4, 5});
  try {
    ops::matmul_forward(out, inp, w, nullptr, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("matmul_forward: inp (4, 6) does not end in C=7"));
  }
  Tensor w2 = rnd(DType::bf16, {5, 6});
  try {
    ops::matmul_forward(out, inp, w2, nullptr, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("weight has dtype bf16, expected f32"));
  }
  Tensor toks = make(DType::i32, {1, 2}), wte = rnd(DType::f32, {3, 4}), wpe = rnd(DType::f32, {2, 4}),
         eo = make(DType::f32, {1, 2, 4});
  toks.ptr<std::int32_t>()[0] = 0;
  toks.ptr<std::int32_t>()[1] = 3;
  try {
    ops::encoder_forward(eo, toks, wte, wpe, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("token 3 outside the vocabulary [0, 3)"));
  }
  try {
    ops::matmul_forward(out, inp, rnd(DType::f32, {5, 6}), nullptr, s, ops::MatmulAlgo::cublas);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the cublas algorithm needs the cuda device"));
  }
  Tensor qkv = rnd(DType::f32, {1, 3, 12}), ao = make(DType::f32, {1, 3, 4}), att = make(DType::f32, {1, 3, 3, 3});
  try {
    ops::attention_forward(ao, att, qkv, 3, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("NH=3 does not divide C=4"));
  }
  TrackedAllocator other{Device{DeviceKind::simt}};
  Tensor elsewhere(other, DType::f32, {4, 5}, MemCategory::activations);
  try {
    ops::gelu_forward(elsewhere, rnd(DType::f32, {4, 5}), s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("gelu_forward: out is on simt but the stream is on cpu"));
  }
  EXPECT_TRUE(ops::kernels_available(DeviceKind::cpu));
}

TEST_F(CpuOps, ShardOpsRejectBadInput) {
  using ::testing::HasSubstr;
  auto expect_error = [](const std::function<void()>& f, const std::string& want) {
    try {
      f();
      ADD_FAILURE() << "no error, expected: " << want;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(want));
    }
  };
  Tensor toks = make(DType::i32, {1, 2}), wte = rnd(DType::f32, {3, 4}), wpe = rnd(DType::f32, {1, 4}),
         eo = make(DType::f32, {1, 2, 4});
  toks.ptr<std::int32_t>()[0] = 7;  // outside the shard: fine
  toks.ptr<std::int32_t>()[1] = -1;
  expect_error([&] { ops::encoder_forward_shard(eo, toks, wte, &wpe, 0, s); },
               "encoder_forward_shard: wpe has shape (1, 4), expected (maxT >= 2, 4)");
  expect_error([&] { ops::encoder_forward_shard(eo, toks, wte, nullptr, -3, s); },
               "encoder_forward_shard: vocab_begin -3 outside [0, 2147483647]");
  Tensor bad_out = make(DType::f32, {1, 2, 5});
  expect_error([&] { ops::encoder_forward_shard(bad_out, toks, wte, nullptr, 3, s); },
               "encoder_forward_shard: out has shape (1, 2, 5), expected (1, 2, 4)");
  Tensor dwte_bf16 = rnd(DType::bf16, {3, 4});
  expect_error([&] { ops::encoder_backward_shard(dwte_bf16, nullptr, eo, toks, 3, s); },
               "encoder_backward_shard: dwte has dtype bf16, expected f32");
  ops::encoder_forward_shard(eo, toks, wte, nullptr, 3, s);  // tokens 7 and -1 lie outside [3, 6): zeros
  EXPECT_EQ(test::to_vector(eo), V(8, 0.0));

  Tensor logits = rnd(DType::f32, {2, 3, 5}), targets = make(DType::i32, {2, 3});
  std::fill_n(targets.ptr<std::int32_t>(), 6, 9);
  Tensor stat = make(DType::f32, {2, 3}), stat2 = make(DType::f32, {2, 3}), stat3 = make(DType::f32, {2, 3}),
         loss = make(DType::f32, {6});
  expect_error([&] { ops::crossentropy_shard_max(wte, logits, s); },
               "crossentropy_shard_max: row_max has 12 elements (3, 4), expected 6");
  Tensor stat_bf16 = make(DType::bf16, {2, 3});
  expect_error([&] { ops::crossentropy_shard_max(stat_bf16, logits, s); },
               "crossentropy_shard_max: row_max has dtype bf16, expected f32");
  Tensor short_targets = make(DType::i32, {5});
  expect_error([&] { ops::crossentropy_shard_sums(stat, stat2, logits, short_targets, stat3, 0, s); },
               "crossentropy_shard_sums: targets has 5 elements (5), expected 6");
  expect_error([&] { ops::crossentropy_shard_sums(stat, wte, logits, targets, stat3, 0, s); },
               "crossentropy_shard_sums: target_logit has 12 elements");
  expect_error([&] { ops::crossentropy_shard_sums(stat, stat2, logits, targets, stat3, std::int64_t(1) << 31, s); },
               "crossentropy_shard_sums: vocab_begin 2147483648 outside [0, 2147483647]");
  targets.ptr<std::int32_t>()[4] = -2;
  expect_error([&] { ops::crossentropy_shard_finish(loss, nullptr, logits, targets, stat, stat2, stat3, 0, 1.f, s); },
               "crossentropy_shard_finish: target -2 is negative");
  targets.ptr<std::int32_t>()[4] = 9;
  Tensor bad_dl = make(DType::f32, {2, 3, 4});
  expect_error([&] { ops::crossentropy_shard_finish(loss, &bad_dl, logits, targets, stat, stat2, stat3, 0, 1.f, s); },
               "crossentropy_shard_finish: dlogits has 24 elements (2, 3, 4), expected 30");
  Tensor logits_i32 = make(DType::i32, {2, 3, 5});
  expect_error([&] { ops::crossentropy_shard_max(stat, logits_i32, s); },
               "crossentropy_shard_max: logits has dtype i32; supported: f32, bf16, f64");
}

}  // namespace
}  // namespace parbench
