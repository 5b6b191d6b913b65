// RoPE's reference on known values (the kernels against it are in test_kernels_simt.cpp, the op table's three-way
// and finite-difference checks in test_op_table): the table against the float64 formula at long positions, position
// 0 the identity, D = 2 a rotation by the position in radians, a hand-worked D = 4 case, the backward undoing the
// forward with each pair's norm kept, in place, and bad input refused with the tensor's name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "base/error.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench {
namespace {

using test::at;
using test::CpuOps;

DType table_dtype(DType d) { return d == DType::f64 ? DType::f64 : DType::f32; }
// For values of order 1: float64 to rounding, f32 to a few float steps, bf16 to its 8-bit mantissa.
double tol_of(DType d) { return d == DType::f64 ? 1e-12 : d == DType::f32 ? 1e-6 : 2e-2; }

// Positions 0 to 8299 at Llama 3's theta = 500000 and D = 128: every entry is the formula's cos or sin of
// t * theta^(-2i/D) (computed in double, then rounded to the table's type), row 0 is (1, 0) exactly, and a shard's
// table (positions from 8190) is rows 8190 on of the whole one, bit for bit.
TEST_F(CpuOps, RopeTableIsTheFormulaAtLongPositions) {
  const int T = 8300, D = 128, half = D / 2;
  const double theta = 500000;
  for (DType d : {DType::f64, DType::f32}) {
    Tensor cs = poisoned(d, {T, half, 2});
    ops::rope_table(cs, T, D, theta, 0, s);
    double worst = 0;
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < half; ++i) {
        const double angle = t * std::pow(theta, -2.0 * i / D);
        const std::int64_t k = 2 * (std::int64_t(t) * half + i);
        worst = std::max({worst, std::abs(at(cs, k) - std::cos(angle)), std::abs(at(cs, k + 1) - std::sin(angle))});
      }
    EXPECT_LE(worst, d == DType::f64 ? 1e-15 : 1e-7) << dtype_name(d);
    for (int i = 0; i < half; ++i) {
      EXPECT_EQ(at(cs, 2 * i), 1.0) << i;
      EXPECT_EQ(at(cs, 2 * i + 1), 0.0) << i;
    }
    Tensor shard = poisoned(d, {37, half, 2});
    ops::rope_table(shard, 37, D, theta, 8190, s);
    for (std::int64_t e = 0; e < shard.numel(); ++e)
      ASSERT_EQ(at(shard, e), at(cs, 8190 * D + e)) << dtype_name(d) << " element " << e;
  }
}

// At position 0 every angle is 0, so out is inp bit for bit. With D = 2 the one pair's frequency is theta^0 = 1
// whatever theta: position p turns (x0, x1) by p radians.
TEST_F(CpuOps, RopeIsTheIdentityAtPositionZeroAndARotationByPAtD2) {
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    Tensor cs = poisoned(table_dtype(d), {5, 4, 2});
    ops::rope_table(cs, 5, 8, 10000, 0, s);
    Tensor x = rnd(d, {2, 5, 3, 8}), y = poisoned(d, {2, 5, 3, 8});
    ops::rope_forward(y, x, cs, s);
    for (int b = 0; b < 2; ++b)
      for (int e = 0; e < 3 * 8; ++e) {
        const std::int64_t k = std::int64_t(b) * 5 * 24 + e;  // t = 0
        EXPECT_EQ(at(y, k), at(x, k)) << dtype_name(d) << " b=" << b << " e=" << e;
      }
    for (double theta : {10000.0, 500000.0, 1.0}) {
      Tensor c2 = poisoned(table_dtype(d), {3, 1, 2});
      ops::rope_table(c2, 3, 2, theta, 1000, s);  // positions 1000, 1001, 1002
      Tensor x2 = rnd(d, {1, 3, 2, 2}), y2 = poisoned(d, {1, 3, 2, 2});
      ops::rope_forward(y2, x2, c2, s);
      for (int t = 0; t < 3; ++t)
        for (int h = 0; h < 2; ++h) {
          const std::int64_t k = (t * 2 + h) * 2;
          const double p = 1000 + t, x0 = at(x2, k), x1 = at(x2, k + 1);
          EXPECT_NEAR(at(y2, k), x0 * std::cos(p) - x1 * std::sin(p), tol_of(d)) << dtype_name(d) << " " << theta;
          EXPECT_NEAR(at(y2, k + 1), x1 * std::cos(p) + x0 * std::sin(p), tol_of(d)) << dtype_name(d) << " " << theta;
        }
    }
  }
}

// D = 4, theta = 100, position 2 (a table of one row from offset 2): the pairs (x0, x2) and (x1, x3) turn by
// 2 * 100^0 = 2 and 2 * 100^(-1/2) = 0.2 radians. x = (1, 2, 3, 4) gives out = (1 cos 2 - 3 sin 2,
// 2 cos 0.2 - 4 sin 0.2, 3 cos 2 + 1 sin 2, 4 cos 0.2 + 2 sin 0.2) = (-3.14403912, 1.16545583, -0.33914308,
// 4.31760497); the backward of dout = out gives x back.
TEST_F(CpuOps, RopeHandWorkedD4) {
  const double by_hand[] = {-3.1440391170, 1.1654558325, -0.3391430828, 4.3176049730};
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    Tensor cs = poisoned(table_dtype(d), {1, 2, 2});
    ops::rope_table(cs, 1, 4, 100, 2, s);
    const double table[] = {std::cos(2.0), std::sin(2.0), std::cos(0.2), std::sin(0.2)};
    for (int e = 0; e < 4; ++e) EXPECT_NEAR(at(cs, e), table[e], d == DType::f64 ? 1e-15 : 1e-7) << e;
    Tensor x = make(d, {1, 1, 1, 4}), y = poisoned(d, {1, 1, 1, 4}), dx = make(d, {1, 1, 1, 4});
    for (int e = 0; e < 4; ++e) {
      store_from_double(x.data(), d, std::size_t(e), e + 1);
      store_from_double(dx.data(), d, std::size_t(e), 0);
    }
    ops::rope_forward(y, x, cs, s);
    for (int e = 0; e < 4; ++e) EXPECT_NEAR(at(y, e), by_hand[e], std::max(tol_of(d), 1e-9)) << dtype_name(d) << e;
    ops::rope_backward(dx, y, cs, s);
    for (int e = 0; e < 4; ++e) EXPECT_NEAR(at(dx, e), e + 1, 2 * tol_of(d)) << dtype_name(d) << " " << e;
  }
}

// A rotation keeps each pair's norm, and the backward (the transpose: a rotation by minus the angle) of the
// forward's output gives the input back, added to what dinp held (it accumulates). Positions 5000 to 5006 at
// theta = 10000, for q's 3 heads and k's 1 (one table serves both); in place (out is inp) is out of place, bit for
// bit.
TEST_F(CpuOps, RopeBackwardUndoesTheForwardKeepingPairNormsInPlaceToo) {
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    const double tol = d == DType::f64 ? 1e-12 : d == DType::f32 ? 1e-5 : 4e-2;
    Tensor cs = poisoned(table_dtype(d), {7, 8, 2});
    ops::rope_table(cs, 7, 16, 10000, 5000, s);
    for (int H : {3, 1}) {
      Tensor x = rnd(d, {2, 7, H, 16}), y = poisoned(d, {2, 7, H, 16});
      ops::rope_forward(y, x, cs, s);
      for (std::int64_t row = 0; row < 2 * 7 * H; ++row)
        for (int i = 0; i < 8; ++i) {
          const std::int64_t a = row * 16 + i, b = a + 8;
          EXPECT_NEAR(at(y, a) * at(y, a) + at(y, b) * at(y, b), at(x, a) * at(x, a) + at(x, b) * at(x, b), tol)
              << dtype_name(d) << " H=" << H << " row " << row << " pair " << i;
        }
      Tensor prior = rnd(d, {2, 7, H, 16}), dx = make(d, {2, 7, H, 16});
      test::copy_into(dx, prior);
      ops::rope_backward(dx, y, cs, s);
      for (std::int64_t e = 0; e < x.numel(); ++e)
        EXPECT_NEAR(at(dx, e), at(prior, e) + at(x, e), tol) << dtype_name(d) << " H=" << H << " " << e;
      Tensor z = make(d, {2, 7, H, 16});
      test::copy_into(z, x);
      ops::rope_forward(z, z, cs, s);
      EXPECT_EQ(test::to_vector(z), test::to_vector(y)) << dtype_name(d) << " H=" << H << " in place";
    }
  }
}

// A packed q|k|v of 2 query heads, 1 key head and 1 value head (rotated_heads = 3): heads 0 to 2 are what a
// separate (B,T,3,D) tensor gets, bit for bit, and the value head is copied as it is (forward, out of place and in
// place) or added as it is (backward).
TEST_F(CpuOps, RopeTurnsOnlyTheRotatedHeadsOfAPackedQkv) {
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    const int B = 2, T = 5, H = 4, R = 3, D = 8, row = H * D;
    Tensor cs = poisoned(table_dtype(d), {T, D / 2, 2});
    ops::rope_table(cs, T, D, 10000, 300, s);
    Tensor qkv = rnd(d, {B, T, H, D}), y = poisoned(d, {B, T, H, D}), qk = make(d, {B, T, R, D}),
           qk_y = poisoned(d, {B, T, R, D});
    for (std::int64_t bt = 0; bt < B * T; ++bt)
      for (int e = 0; e < R * D; ++e) store_from_double(qk.data(), d, std::size_t(bt * R * D + e), at(qkv, bt * row + e));
    ops::rope_forward(y, qkv, cs, s, R);
    ops::rope_forward(qk_y, qk, cs, s);
    Tensor z = make(d, {B, T, H, D});
    test::copy_into(z, qkv);
    ops::rope_forward(z, z, cs, s, R);
    Tensor prior = rnd(d, {B, T, H, D}), dx = make(d, {B, T, H, D}), dqk = make(d, {B, T, R, D});
    test::copy_into(dx, prior);
    for (std::int64_t bt = 0; bt < B * T; ++bt)
      for (int e = 0; e < R * D; ++e) store_from_double(dqk.data(), d, std::size_t(bt * R * D + e), at(prior, bt * row + e));
    ops::rope_backward(dx, qkv, cs, s, R);
    ops::rope_backward(dqk, qk, cs, s);
    Tensor one = make(d, {1});
    for (std::int64_t bt = 0; bt < B * T; ++bt)
      for (int e = 0; e < row; ++e) {
        const std::int64_t k = bt * row + e;
        const bool turned = e < R * D;
        const double want = turned ? at(qk_y, bt * R * D + e) : at(qkv, k);
        ASSERT_EQ(at(y, k), want) << dtype_name(d) << " token " << bt << " channel " << e;
        ASSERT_EQ(at(z, k), want) << dtype_name(d) << " in place, token " << bt << " channel " << e;
        store_from_double(one.data(), d, 0, at(prior, k) + at(qkv, k));  // the sum rounded to the storage type
        const double dwant = turned ? at(dqk, bt * R * D + e) : at(one, 0);
        ASSERT_EQ(at(dx, k), dwant) << dtype_name(d) << " backward, token " << bt << " channel " << e;
      }
  }
}

TEST_F(CpuOps, RopeBadInputIsRefusedWithItsName) {
  using ::testing::HasSubstr;
  using test::error_of;
  const DType f = DType::f32;
  Tensor cs = make(f, {4, 4, 2});
  ops::rope_table(cs, 4, 8, 10000, 0, s);
  Tensor x = rnd(f, {2, 4, 3, 8}), y = make(f, {2, 4, 3, 8}), odd = rnd(f, {2, 4, 3, 7}), odd_y = make(f, {2, 4, 3, 7});
  Tensor x5 = rnd(f, {2, 5, 3, 8}), y5 = make(f, {2, 5, 3, 8}), flat = rnd(f, {8, 24}), narrow = make(f, {2, 4, 3, 6});
  Tensor pairs3 = make(f, {4, 3, 2}), cs16 = make(DType::bf16, {4, 4, 2});
  EXPECT_THAT(error_of([&] { ops::rope_forward(odd_y, odd, make(f, {4, 3, 2}), s); }),
              HasSubstr("rope_forward: inp's head size D=7 is not even and >= 2"));
  EXPECT_THAT(error_of([&] { ops::rope_forward(y5, x5, cs, s); }),
              HasSubstr("rope_forward: cos_sin has 4 positions, fewer than T=5 of inp"));
  EXPECT_THAT(error_of([&] { ops::rope_backward(y5, x5, cs, s); }),
              HasSubstr("rope_backward: cos_sin has 4 positions, fewer than T=5 of dout"));
  EXPECT_THAT(error_of([&] { ops::rope_forward(y, x, pairs3, s); }),
              HasSubstr("rope_forward: cos_sin has shape (4, 3, 2), expected (T, D/2, 2) with D=8"));
  EXPECT_THAT(error_of([&] { ops::rope_forward(y, x, cs16, s); }),
              HasSubstr("rope_forward: cos_sin has dtype bf16, expected f32"));
  EXPECT_THAT(error_of([&] { ops::rope_forward(narrow, x, cs, s); }),
              HasSubstr("rope_forward: out has shape (2, 4, 3, 6), expected (2, 4, 3, 8)"));
  EXPECT_THAT(error_of([&] { ops::rope_forward(flat, flat, cs, s); }),
              HasSubstr("rope_forward: inp has shape (8, 24), expected (B, T, H, D)"));
  EXPECT_THAT(error_of([&] { ops::rope_backward(narrow, x, cs, s); }),
              HasSubstr("rope_backward: dinp has shape (2, 4, 3, 6), expected (2, 4, 3, 8)"));
  EXPECT_THAT(error_of([&] { ops::rope_forward(y, x, cs, s, 4); }),
              HasSubstr("rope_forward: rotated_heads=4 is not in [0, H=3] (or -1: all of inp's heads)"));
  EXPECT_THAT(error_of([&] { ops::rope_backward(y, x, cs, s, -2); }),
              HasSubstr("rope_backward: rotated_heads=-2 is not in [0, H=3] (or -1: all of dout's heads)"));
  EXPECT_THAT(error_of([&] { ops::rope_table(pairs3, 4, 7, 10000, 0, s); }),
              HasSubstr("rope_table: the head size D=7 is not even and >= 2"));
  EXPECT_THAT(error_of([&] { ops::rope_table(cs, 5, 8, 10000, 0, s); }),
              HasSubstr("rope_table: cos_sin has shape (4, 4, 2), expected (5, 4, 2)"));
  EXPECT_THAT(error_of([&] { ops::rope_table(cs16, 4, 8, 10000, 0, s); }),
              HasSubstr("rope_table: cos_sin has dtype bf16, expected f32"));
  EXPECT_THAT(error_of([&] { ops::rope_table(cs, 4, 8, 0.5, 0, s); }),
              HasSubstr("the base must be finite and >= 1"));
  EXPECT_THAT(error_of([&] { ops::rope_table(cs, 4, 8, 10000, (std::int64_t(1) << 24) - 3, s); }),
              HasSubstr("rope_table: positions offset=16777213"));
  EXPECT_THAT(error_of([&] { ops::rope_table(cs, 4, 8, 10000, -1, s); }), HasSubstr("rope_table: positions offset=-1"));
  ops::rope_table(cs, 4, 8, 10000, (std::int64_t(1) << 24) - 4, s);  // the last position, 2^24 - 1, is allowed
}

}  // namespace
}  // namespace parbench
