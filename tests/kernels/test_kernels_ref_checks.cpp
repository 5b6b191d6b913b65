// matmul_backward's accumulation and the fused rmsnorm_residual against its parts on the cpu device, and the
// dispatch API's checks of bad input (each error names the op and the bad value).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "base/error.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench {
namespace {

using V = std::vector<double>;
using test::CpuOps;

// ---------------------------------------------------------------- accumulation
// The gradients themselves are checked against finite differences through the op table's pairs
// (test_op_table_gradients.cpp); what that check does not call is matmul_backward's accumulate, which adds the same
// gradients again.
TEST_F(CpuOps, MatmulBackwardAccumulateAddsTheGradientsAgain) {
  constexpr DType F = DType::f64;
  Tensor inp = rnd(F, {2, 5, 8}), w = rnd(F, {6, 8}), dout = rnd(F, {2, 5, 6});
  Tensor dinp = poisoned(F, {2, 5, 8}), dw = poisoned(F, {6, 8}), db = poisoned(F, {6});
  ops::matmul_backward(&dinp, &dw, &db, dout, inp, w, false, s);
  const V once_inp = test::to_vector(dinp), once_w = test::to_vector(dw), once_b = test::to_vector(db);
  ops::matmul_backward(&dinp, &dw, &db, dout, inp, w, true, s);
  auto twice = [](V v) {
    for (double& x : v) x *= 2;
    return v;
  };
  EXPECT_LE(test::rel_l2(test::to_vector(dinp), twice(once_inp)), 1e-12);
  EXPECT_LE(test::rel_l2(test::to_vector(dw), twice(once_w)), 1e-12);
  EXPECT_LE(test::rel_l2(test::to_vector(db), twice(once_b)), 1e-12);
}

// The fused op is the residual add then the plain one, bit for bit: forward in every storage dtype (h is the
// rounded sum either way), backward in f32 and f64 (where dh + g, the residual stream's gradient after the norm's
// backward added into it, rounds as g + dh) from gradients of zero.
TEST_F(CpuOps, RmsnormResidualIsTheResidualAddThenTheNorm) {
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    const DType a = d == DType::f64 ? DType::f64 : DType::f32;
    Tensor x = rnd(d, {3, 5, 20}, -2, 2), r = rnd(d, {3, 5, 20}), w = rnd(d, {20});
    Tensor h = poisoned(d, {3, 5, 20}), y = poisoned(d, {3, 5, 20}), rstd = poisoned(a, {3, 5});
    Tensor h2 = poisoned(d, {3, 5, 20}), y2 = poisoned(d, {3, 5, 20}), rstd2 = poisoned(a, {3, 5});
    ops::rmsnorm_residual_forward(y, h, rstd, x, r, w, s);
    ops::residual_forward(h2, x, r, s);
    ops::rmsnorm_forward(y2, rstd2, h2, w, s);
    EXPECT_EQ(test::to_vector(h), test::to_vector(h2)) << dtype_name(d);
    EXPECT_EQ(test::to_vector(y), test::to_vector(y2)) << dtype_name(d);
    EXPECT_EQ(test::to_vector(rstd), test::to_vector(rstd2)) << dtype_name(d);
    if (d == DType::bf16) continue;
    Tensor dh = rnd(d, {3, 5, 20}), dy = rnd(d, {3, 5, 20});
    Tensor dx = make(d, {3, 5, 20}), dr = make(d, {3, 5, 20}), dw = make(d, {20});
    Tensor dx2 = make(d, {3, 5, 20}), dr2 = make(d, {3, 5, 20}), dw2 = make(d, {20}), stream = make(d, {3, 5, 20});
    for (Tensor* t : {&dx, &dr, &dw, &dx2, &dr2, &dw2}) std::memset(t->data(), 0, t->bytes());
    test::copy_into(stream, dh);
    ops::rmsnorm_residual_backward(dx, dr, dw, dh, dy, h, w, rstd, s);
    ops::rmsnorm_backward(stream, dw2, dy, h, w, rstd, s);  // the residual stream's gradient += the norm's
    ops::residual_backward(dx2, dr2, stream, s);
    EXPECT_EQ(test::to_vector(dx), test::to_vector(dx2)) << dtype_name(d);
    EXPECT_EQ(test::to_vector(dr), test::to_vector(dx2)) << dtype_name(d);
    EXPECT_EQ(test::to_vector(dr2), test::to_vector(dx2)) << dtype_name(d);
    EXPECT_EQ(test::to_vector(dw), test::to_vector(dw2)) << dtype_name(d);
  }
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
  Tensor rx = rnd(DType::f32, {4, 6}), rw = rnd(DType::f32, {6}), ry = make(DType::f32, {4, 6});
  Tensor short_rstd = make(DType::f32, {3}), rstd = make(DType::f32, {4}), rh = make(DType::f32, {4, 6});
  try {
    ops::rmsnorm_forward(ry, short_rstd, rx, rw, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rmsnorm_forward: rstd has 3 elements"));
  }
  try {
    ops::rmsnorm_residual_forward(ry, rh, rstd, rx, rnd(DType::bf16, {4, 6}), rw, s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rmsnorm_residual_forward: residual has dtype bf16, expected f32"));
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
