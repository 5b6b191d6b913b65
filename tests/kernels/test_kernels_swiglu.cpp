// SwiGLU's reference on known values (the kernels against it are in test_kernels_simt.cpp, the op table's three-way
// and finite-difference checks in test_op_table): silu(0) = 0, a large gate passing up * gate through, a large
// negative one giving 0 with finite gradients, a hand-worked row and its gradients, the gradient against the
// analytic formula, and bad input refused with the tensor's name and the expected shape.
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

// For values of order 1: float64 to rounding, f32 to a few float steps, bf16 to its 8-bit mantissa.
double swiglu_tol(DType d) { return d == DType::f64 ? 1e-13 : d == DType::f32 ? 1e-6 : 2e-2; }

void swiglu_put(Tensor& t, std::int64_t i, double v) { store_from_double(t.data(), t.dtype(), std::size_t(i), v); }

// One row of F = 4: gates (0, 30, -100, -1e30) with ups (5, 2, 3, 7), dout 1. silu(0) = 0 whatever up, and its
// gradient of the gate is up * silu'(0) = up / 2; at 30 the sigmoid is 1 - 1e-13, so out = up * gate; at -100 and
// -1e30 the output and both gradients are 0 or within 1e-38 of it (exp(-g) would overflow there: inf / inf).
TEST_F(CpuOps, SwigluAtZeroLargeAndHugeNegativeGates) {
  const double gate[] = {0, 30, -100, -1e30}, up[] = {5, 2, 3, 7};
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    Tensor x = make(d, {1, 8}), y = poisoned(d, {1, 4}), dy = make(d, {1, 4}), dx = poisoned(d, {1, 8});
    for (int j = 0; j < 4; ++j) {
      swiglu_put(x, j, gate[j]);
      swiglu_put(x, 4 + j, up[j]);
      swiglu_put(dy, j, 1);
    }
    ops::swiglu_forward(y, x, s);
    ops::swiglu_backward(dx, x, dy, s);
    const std::string what = std::string(dtype_name(d));
    EXPECT_EQ(at(y, 0), 0.0) << what;
    EXPECT_EQ(at(dx, 0), 2.5) << what;  // up * silu'(0) = 5 * 1/2
    EXPECT_EQ(at(dx, 4), 0.0) << what;  // silu(0)
    EXPECT_NEAR(at(y, 1), 60, 60 * swiglu_tol(d)) << what;
    EXPECT_NEAR(at(dx, 1), 2, std::max(2 * swiglu_tol(d), 1e-11)) << what;  // up * silu'(30) = 2 (1 + 2.7e-12)
    EXPECT_NEAR(at(dx, 5), 30, 30 * swiglu_tol(d)) << what;  // silu(30)
    for (int j : {2, 3}) {  // exactly 0 at -1e30; at -100 of order 1e-41 (sigmoid(-100) = 3.7e-44)
      EXPECT_LE(std::abs(at(y, j)), 1e-38) << what << " gate " << gate[j];
      EXPECT_LE(std::abs(at(dx, j)), 1e-38) << what << " dgate at " << gate[j];
      EXPECT_LE(std::abs(at(dx, 4 + j)), 1e-38) << what << " dup at " << gate[j];
    }
    EXPECT_EQ(at(y, 3), 0.0) << what;
    EXPECT_EQ(at(dx, 3), 0.0) << what;
    EXPECT_EQ(at(dx, 7), 0.0) << what;
  }
}

// By hand: gate 1, up 2, dout 3: sigmoid(1) = 0.7310585786, out = 2 * 0.7310585786 = 1.4621171573, dup = 3 *
// silu(1) = 2.1931757359, dgate = 3 * 2 * s (1 + 1 (1 - s)) = 5.5660230712. Gate -2, up 0.5, dout -1.5: sigmoid(-2)
// = 0.1192029220, out = 0.5 * -2 * 0.1192029220 = -0.1192029220, dup = -1.5 * -0.2384058440 = 0.3576087661, dgate =
// -1.5 * 0.5 * 0.1192029220 * (1 - 2 * 0.8807970780) = 0.0680881866. Every input is exact in bf16.
TEST_F(CpuOps, SwigluHandWorked) {
  const double want_y[] = {1.4621171572600098, -0.11920292202211755};
  const double want_dx[] = {5.566023071228921, 0.0680881865886716, 2.193175735890015, 0.3576087660663526};
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    Tensor x = make(d, {1, 1, 4}), y = poisoned(d, {1, 1, 2}), dy = make(d, {1, 1, 2}), dx = poisoned(d, {1, 1, 4});
    const double xs[] = {1, -2, 2, 0.5}, dys[] = {3, -1.5};
    for (int e = 0; e < 4; ++e) swiglu_put(x, e, xs[e]);
    for (int e = 0; e < 2; ++e) swiglu_put(dy, e, dys[e]);
    ops::swiglu_forward(y, x, s);
    ops::swiglu_backward(dx, x, dy, s);
    for (int e = 0; e < 2; ++e) EXPECT_NEAR(at(y, e), want_y[e], swiglu_tol(d) * 2) << dtype_name(d) << " out " << e;
    for (int e = 0; e < 4; ++e) EXPECT_NEAR(at(dx, e), want_dx[e], swiglu_tol(d) * 6) << dtype_name(d) << " dinp " << e;
  }
}

// Random rows in float64 against the formula written plainly, silu(g) = g / (1 + exp(-g)) and silu'(g) = s (1 + g
// (1 - s)): the forward and both gradients to rounding; dinp is overwritten (its prior contents do not matter).
TEST_F(CpuOps, SwigluMatchesTheAnalyticFormulaAndItsGradient) {
  const int N = 6, F = 13;
  Tensor x = rnd(DType::f64, {2, 3, 2 * F}, -8, 8), dy = rnd(DType::f64, {2, 3, F});
  Tensor y = poisoned(DType::f64, {2, 3, F}), dx = rnd(DType::f64, {2, 3, 2 * F});
  ops::swiglu_forward(y, x, s);
  ops::swiglu_backward(dx, x, dy, s);
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < F; ++j) {
      const double g = at(x, r * 2 * F + j), u = at(x, r * 2 * F + F + j), dout = at(dy, r * F + j);
      const double sg = 1 / (1 + std::exp(-g)), silu = g / (1 + std::exp(-g));
      EXPECT_NEAR(at(y, r * F + j), silu * u, 1e-14) << r << " " << j;
      EXPECT_NEAR(at(dx, r * 2 * F + j), dout * u * sg * (1 + g * (1 - sg)), 1e-13) << r << " " << j;
      EXPECT_NEAR(at(dx, r * 2 * F + F + j), dout * silu, 1e-13) << r << " " << j;
    }
}

TEST_F(CpuOps, SwigluBadInputIsRefusedWithItsNameAndTheExpectedShape) {
  using ::testing::HasSubstr;
  using test::error_of;
  const DType f = DType::f32;
  Tensor x = rnd(f, {2, 3, 8}), y = make(f, {2, 3, 4}), dy = rnd(f, {2, 3, 4}), dx = make(f, {2, 3, 8});
  Tensor y5 = make(f, {2, 3, 5}), y8 = make(f, {2, 3, 8}), odd = rnd(f, {2, 7}), odd_y = make(f, {2, 3});
  Tensor x16 = rnd(DType::bf16, {2, 3, 8}), dx4 = make(f, {2, 3, 4}), flat = make(f, {6, 4});
  EXPECT_THAT(error_of([&] { ops::swiglu_forward(y5, x, s); }),
              HasSubstr("swiglu_forward: out has shape (2, 3, 5), expected (2, 3, 4): out's last dimension is half "
                        "of inp's"));
  EXPECT_THAT(error_of([&] { ops::swiglu_forward(y8, x, s); }),
              HasSubstr("swiglu_forward: out has shape (2, 3, 8), expected (2, 3, 4)"));
  EXPECT_THAT(error_of([&] { ops::swiglu_forward(flat, x, s); }),
              HasSubstr("swiglu_forward: out has shape (6, 4), expected (2, 3, 4)"));
  EXPECT_THAT(error_of([&] { ops::swiglu_forward(odd_y, odd, s); }),
              HasSubstr("swiglu_forward: inp has shape (2, 7), whose last dimension is odd"));
  EXPECT_THAT(error_of([&] { ops::swiglu_forward(y, x16, s); }),
              HasSubstr("swiglu_forward: inp has dtype bf16, expected f32"));
  EXPECT_THAT(error_of([&] { ops::swiglu_backward(dx, x, y5, s); }),
              HasSubstr("swiglu_backward: dout has shape (2, 3, 5), expected (2, 3, 4): dout's last dimension is "
                        "half of inp's"));
  EXPECT_THAT(error_of([&] { ops::swiglu_backward(dx4, x, dy, s); }),
              HasSubstr("swiglu_backward: dinp has shape (2, 3, 4), expected (2, 3, 8)"));
  EXPECT_THAT(error_of([&] { ops::swiglu_backward(x, x, dy, s); }), HasSubstr("swiglu_backward: dinp overlaps inp"));
  Tensor big = make(f, {2, 3, 12});
  Tensor dy_in_big = big.slice(0, {2, 3, 4}), dx_in_big = big.slice(4 * 6, {2, 3, 8});
  EXPECT_THAT(error_of([&] { ops::swiglu_backward(dx_in_big, x, big.slice(4 * 6 - 1, {2, 3, 4}), s); }),
              HasSubstr("swiglu_backward: dinp overlaps dout"));
  ops::swiglu_backward(dx_in_big, x, dy_in_big, s);  // adjacent, not overlapping: allowed
  Tensor y_in_x = x.slice(0, {2, 3, 4});
  EXPECT_THAT(error_of([&] { ops::swiglu_forward(y_in_x, x, s); }), HasSubstr("swiglu_forward: out overlaps inp"));
}

}  // namespace
}  // namespace parbench
