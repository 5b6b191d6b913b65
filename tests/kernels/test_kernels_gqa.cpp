// Grouped-query attention on the cpu reference (f32, bf16, f64): the plain and flash pairs with KV kv heads equal
// multi-head attention on K/V repeated by hand (forward and dq exactly, a kv head's dk and dv as the sum over its
// group), multi-query (KV = 1) included, and inputs that fit no (B, T, (NH + 2 KV) hs) refused with the expected form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/ops.h"
#include "tests/kernels/gqa_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench {
namespace {

using test::CpuOps;
using test::GqaDims;

// Groups of 2 and of 4 (multi-query), odd T; one batch of three heads with KV = 1 and hs odd.
const GqaDims kDims[] = {{2, 7, 4, 2, 8}, {1, 9, 4, 1, 6}, {1, 5, 3, 1, 5}, {2, 6, 4, 4, 4}};

std::string name(const GqaDims& g) {
  return "B" + std::to_string(g.B) + " T" + std::to_string(g.T) + " NH" + std::to_string(g.NH) + " KV" +
         std::to_string(g.KV) + " hs" + std::to_string(g.hs);
}

// Largest |a - b| over the elements, relative to the largest |b|.
double max_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0, m = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    e = std::max(e, std::abs(a[i] - b[i]));
    m = std::max(m, std::abs(b[i]));
  }
  return e / m;
}

class GqaRef : public test::CpuOps, public ::testing::WithParamInterface<DType> {};

TEST_P(GqaRef, EqualsMultiHeadOnRepeatedKv) {
  const DType d = GetParam();
  for (const GqaDims& g : kDims) {
    const int B = g.B, T = g.T, C = g.C(), NH = g.NH;
    Tensor inp = rnd(d, {B, T, g.width()}, -2, 2), rep = make(d, {B, T, 3 * C});
    test::repeat_kv(rep, inp, g);
    Tensor dout = rnd(d, {B, T, C});
    for (bool flash : {false, true}) {
      const Shape stats = flash ? Shape{B, NH, T} : Shape{B, NH, T, T};
      const DType a = d == DType::f64 ? DType::f64 : DType::f32;
      Tensor o = poisoned(d, {B, T, C}), orep = poisoned(d, {B, T, C}), st = poisoned(a, stats),
             strep = poisoned(a, stats), dx = poisoned(d, {B, T, g.width()}), dxrep = poisoned(d, {B, T, 3 * C}),
             sc = poisoned(a, stats);
      if (flash) {
        ops::flash_attention_forward(o, st, inp, NH, s);
        ops::flash_attention_forward(orep, strep, rep, NH, s);
        ops::flash_attention_backward(dx, sc, dout, inp, o, st, NH, s);
        ops::flash_attention_backward(dxrep, sc, dout, rep, orep, strep, NH, s);
      } else {
        ops::attention_forward(o, st, inp, NH, s);
        ops::attention_forward(orep, strep, rep, NH, s);
        ops::attention_backward(dx, sc, dout, inp, st, NH, s);
        ops::attention_backward(dxrep, sc, dout, rep, strep, NH, s);
      }
      const std::string what = name(g) + (flash ? " flash " : " plain ") + std::string(dtype_name(d));
      // The same arithmetic on the same values: the forward is exact.
      EXPECT_EQ(test::to_vector(o), test::to_vector(orep)) << what << " out";
      EXPECT_EQ(test::to_vector(st), test::to_vector(strep)) << what << " att/lse";
      const std::vector<double> got = test::to_vector(dx), want = test::fold_groups(dxrep, g);
      for (std::size_t i = 0; i < got.size(); ++i)
        if (int(i % std::size_t(g.width())) < C) {
          ASSERT_EQ(got[i], want[i]) << what << " dq at " << i;
        }
      // dk and dv: the reference sums the group in its accumulator before rounding, the repeated run rounds each
      // head's part first.
      const double tol = d == DType::bf16 ? 1e-2 : d == DType::f32 ? 1e-6 : 1e-13;
      EXPECT_LE(max_rel(got, want), tol) << what << " dk, dv";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GqaRef, ::testing::Values(DType::f32, DType::bf16, DType::f64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST_F(CpuOps, GqaRefusesInputsOfNoKvHeadCount) {
  using ::testing::HasSubstr;
  auto expect_error = [&](int width, int NH, bool flash, const std::string& want) {
    Tensor inp = rnd(DType::f32, {1, 3, width}), out = make(DType::f32, {1, 3, 8});
    Tensor att = make(DType::f32, {1, NH, 3, 3}), lse = make(DType::f32, {1, NH, 3});
    try {
      if (flash)
        ops::flash_attention_forward(out, lse, inp, NH, s);
      else
        ops::attention_forward(out, att, inp, NH, s);
      FAIL() << "no error for width " << width;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(want)) << e.what();
    }
  };
  const std::string form = "inp must be (B, T, (NH + 2 KV) hs) with hs = C/NH = 2 and KV kv heads dividing NH";
  expect_error(8 + 3, 4, false, "attention_forward: inp (1, 3, 11) does not fit out (1, 3, 8) with NH=4");
  expect_error(8 + 3, 4, false, form);  // half a head
  expect_error(8 + 6, 4, true, "flash_attention_forward: inp (1, 3, 14) does not fit out");  // KV = 3
  expect_error(8 + 6, 4, true, form);
  expect_error(8, 4, false, form);       // no k, v
  expect_error(8 + 20, 4, false, form);  // KV = 5 > NH
  expect_error(8 + 4, 3, false, "NH=3 does not divide C=8");
}

}  // namespace
}  // namespace parbench
