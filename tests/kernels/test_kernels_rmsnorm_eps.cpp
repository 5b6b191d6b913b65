// RMSNorm's eps on the cpu reference (the kernels with a non-default eps are in test_kernels_simt.cpp): rows of
// small magnitude, where eps = 1e-2 outweighs mean(x^2) and the result is far from the default's, against the
// float64 formula, plain and fused with the residual; the default is 1e-5; eps not finite or not > 0 is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench {
namespace {

using test::at;
using test::CpuOps;

// The largest relative error of rstd and out against rstd = 1 / sqrt(mean(h^2) + eps), out = h * rstd * w.
struct RmsErr {
  double rstd, out;
};
RmsErr rms_error(const Tensor& h, const Tensor& w, const Tensor& out, const Tensor& rstd, double eps) {
  const std::int64_t C = w.numel(), N = h.numel() / C;
  RmsErr e{0, 0};
  for (std::int64_t r = 0; r < N; ++r) {
    double ss = 0;
    for (std::int64_t c = 0; c < C; ++c) ss += at(h, r * C + c) * at(h, r * C + c);
    const double want = 1 / std::sqrt(ss / double(C) + eps);
    e.rstd = std::max(e.rstd, std::abs(at(rstd, r) - want) / want);
    for (std::int64_t c = 0; c < C; ++c) {
      const double y = at(h, r * C + c) * want * at(w, c);
      e.out = std::max(e.out, std::abs(at(out, r * C + c) - y) / std::max(std::abs(y), 1e-3));
    }
  }
  return e;
}

TEST_F(CpuOps, RmsnormNonDefaultEpsIsTheFormula) {
  const int C = 40;
  const float eps = 1e-2f;
  for (DType d : {DType::f64, DType::f32, DType::bf16}) {
    const DType a = d == DType::f64 ? DType::f64 : DType::f32;
    // rstd is fp32 for f32 and bf16 storage (from the stored values, which the formula reads too); out is rounded
    // to the storage type.
    const double tol = d == DType::f64 ? 1e-13 : 1e-6, out_tol = d == DType::bf16 ? 1e-2 : 2 * tol;
    Tensor x = rnd(d, {3, 5, C}, -0.05, 0.05), r = rnd(d, {3, 5, C}, -0.05, 0.05), w = rnd(d, {C});
    Tensor y = poisoned(d, {3, 5, C}), rstd = poisoned(a, {3, 5}), y0 = poisoned(d, {3, 5, C}),
           rstd0 = poisoned(a, {3, 5});
    ops::rmsnorm_forward(y, rstd, x, w, s, eps);
    RmsErr e = rms_error(x, w, y, rstd, 1e-2);  // eps as written (the float64 reference adds 1e-2 itself)
    EXPECT_LE(e.rstd, tol) << dtype_name(d);
    EXPECT_LE(e.out, out_tol) << dtype_name(d);
    ops::rmsnorm_forward(y0, rstd0, x, w, s);  // the default, 1e-5: rstd of order 30 here against 10 with 1e-2
    EXPECT_LE(rms_error(x, w, y0, rstd0, 1e-5).rstd, tol) << dtype_name(d) << " default eps";
    EXPECT_GT(rms_error(x, w, y, rstd, 1e-5).rstd, 0.3) << dtype_name(d) << " eps should matter here";
    Tensor h = poisoned(d, {3, 5, C}), y2 = poisoned(d, {3, 5, C}), rstd2 = poisoned(a, {3, 5});
    ops::rmsnorm_residual_forward(y2, h, rstd2, x, r, w, s, eps);
    e = rms_error(h, w, y2, rstd2, 1e-2);
    EXPECT_LE(e.rstd, tol) << dtype_name(d) << " fused";
    EXPECT_LE(e.out, out_tol) << dtype_name(d) << " fused";
  }
}

TEST_F(CpuOps, RmsnormEpsNotFiniteOrNotPositiveIsRefused) {
  using ::testing::HasSubstr;
  const DType f = DType::f32;
  Tensor x = rnd(f, {2, 8}), w = rnd(f, {8}), y = make(f, {2, 8}), h = make(f, {2, 8}), rstd = make(f, {2});
  const float inf = std::numeric_limits<float>::infinity();
  for (float eps : {0.f, -1e-5f, inf, std::numeric_limits<float>::quiet_NaN()}) {
    try {
      ops::rmsnorm_forward(y, rstd, x, w, s, eps);
      ADD_FAILURE() << "eps " << eps << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("rmsnorm_forward: eps=")) << eps;
      EXPECT_THAT(e.what(), HasSubstr("is refused: it must be finite and > 0")) << eps;
    }
    try {
      ops::rmsnorm_residual_forward(y, h, rstd, x, x, w, s, eps);
      ADD_FAILURE() << "eps " << eps << " accepted by the fused forward";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("rmsnorm_residual_forward: eps=")) << eps;
    }
  }
  ops::rmsnorm_forward(y, rstd, x, w, s, 1e-30f);  // tiny but positive: allowed
}

}  // namespace
}  // namespace parbench
