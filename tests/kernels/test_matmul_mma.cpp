// Matmul version 5 (mma.sync, cp.async pipeline, kernels/matmul_mma.h) on simt against the cpu reference, at
// shapes that exercise the 16-byte path (dimensions multiples of 8), the element path (odd ones), partial block
// tiles and k loops longer than the ring of stages, under forward, reverse and random thread schedules.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "device/simt/simt_runtime.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/simt_pair_fixture.h"

namespace parbench {
namespace {

struct MmaShape {
  int M, N, K;
};
const MmaShape kShapes[] = {{1, 1, 1}, {14, 37, 24}, {130, 136, 200}, {129, 131, 197}, {33, 250, 40}, {8, 16, 264}};

class SimtMatmulMma : public test::SimtPairTest {
 protected:
  // The same values on both devices: small integers when `ints` (exact in bf16, sums exact in fp32), else
  // uniform in [-1, 1] and, in f32, rounded to bf16 values: version 5 feeds the tensor cores bf16 operands, so
  // the rounding of arbitrary f32 inputs would be an error of the inputs, unbounded relative to a result that
  // cancels (a 1x1x1 product plus its bias), not of the kernel.
  std::pair<Tensor, Tensor> in(DType d, Shape s, bool ints) {
    Tensor c = make(cpu_alloc, d, s), g = make(simt_alloc, d, s);
    if (ints) {
      std::uniform_int_distribution<int> u(-3, 3);
      for (std::int64_t i = 0; i < c.numel(); ++i) store_from_double(c.data(), d, std::size_t(i), double(u(rng)));
    } else {
      test::fill_uniform(c, rng, -1, 1);
      if (d == DType::f32)
        for (std::int64_t i = 0; i < c.numel(); ++i) {
          const float v = float(load_as_double(c.data(), d, std::size_t(i)));
          store_from_double(c.data(), d, std::size_t(i), double(bf16_to_float(float_to_bf16(v))));
        }
    }
    test::copy_into(g, c);
    return {std::move(c), std::move(g)};
  }
};

std::string name(const MmaShape& s) {
  return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

TEST_P(SimtMatmulMma, ForwardIsExactOnIntegers) {
  // Integer inputs: the kernel's fp32 sums and the reference's are the same exact value, rounded once to bf16
  // on both sides, so every element must match bit for bit (a fragment or swizzle error cannot hide).
  for (const auto& sh : kShapes)
    for (bool with_bias : {true, false}) {
      auto [x, xs] = in(DType::bf16, {sh.M, sh.K}, true);
      auto [w, ws] = in(DType::bf16, {sh.N, sh.K}, true);
      auto [b, bs] = in(DType::bf16, {sh.N}, true);
      auto [o, os] = out(DType::bf16, {sh.M, sh.N});
      ops::matmul_forward(o, x, w, with_bias ? &b : nullptr, cs);
      ops::matmul_forward(os, xs, ws, with_bias ? &bs : nullptr, ss, ops::MatmulAlgo::mma);
      int bad = 0;
      for (std::int64_t i = 0; i < o.numel(); ++i) bad += test::at(o, i) != test::at(os, i);
      EXPECT_EQ(bad, 0) << name(sh) << (with_bias ? " with bias" : "") << ": elements differing from the reference";
    }
}

TEST_P(SimtMatmulMma, ForwardWithinBf16Bounds) {
  for (DType d : {DType::bf16, DType::f32})
    for (const auto& sh : kShapes) {
      auto [x, xs] = in(d, {sh.M, sh.K}, false);
      auto [w, ws] = in(d, {sh.N, sh.K}, false);
      auto [b, bs] = in(d, {sh.N}, false);
      auto [o, os] = out(d, {sh.M, sh.N});
      ops::matmul_forward(o, x, w, &b, cs);
      ops::matmul_forward(os, xs, ws, &bs, ss, ops::MatmulAlgo::mma);
      const double e = test::rel_l2(os, o);
      std::printf("[simt-err] matmul_forward v5 %-12s %-4s %-8s %.2e\n", name(sh).c_str(),
                  std::string(dtype_name(d)).c_str(), GetParam().c_str(), e);
      EXPECT_LE(e, 1e-2) << name(sh) << " " << dtype_name(d);  // bf16 operands: 2^-8 relative per element
    }
}

// The backward's two products on version 5: dinp = dout weight (weight read k-major) and dweight = dout^T inp (both
// read k-major), overwriting and accumulating; integer inputs again make every element exact.
TEST_P(SimtMatmulMma, BackwardIsExactOnIntegers) {
  for (const auto& sh : kShapes)
    for (bool accumulate : {false, true}) {
      const int BT = sh.M, C = sh.K, OC = sh.N;
      auto [x, xs] = in(DType::bf16, {BT, C}, true);
      auto [w, ws] = in(DType::bf16, {OC, C}, true);
      auto [dy, dys] = in(DType::bf16, {BT, OC}, true);
      auto [dx, dxs] = accumulate ? in(DType::bf16, {BT, C}, true) : out(DType::bf16, {BT, C});
      auto [dw, dws] = accumulate ? in(DType::bf16, {OC, C}, true) : out(DType::bf16, {OC, C});
      ops::matmul_backward(&dx, &dw, nullptr, dy, x, w, accumulate, cs);
      ops::matmul_backward(&dxs, &dws, nullptr, dys, xs, ws, accumulate, ss, ops::MatmulAlgo::mma);
      int bad_dx = 0, bad_dw = 0;
      for (std::int64_t i = 0; i < dx.numel(); ++i) bad_dx += test::at(dx, i) != test::at(dxs, i);
      for (std::int64_t i = 0; i < dw.numel(); ++i) bad_dw += test::at(dw, i) != test::at(dws, i);
      EXPECT_EQ(bad_dx, 0) << name(sh) << (accumulate ? " accumulate" : "") << ": dinp elements differing";
      EXPECT_EQ(bad_dw, 0) << name(sh) << (accumulate ? " accumulate" : "") << ": dweight elements differing";
    }
}

TEST_P(SimtMatmulMma, BackwardWithinBf16Bounds) {
  for (const auto& sh : kShapes) {
    const int BT = sh.M, C = sh.K, OC = sh.N;
    auto [x, xs] = in(DType::bf16, {BT, C}, false);
    auto [w, ws] = in(DType::bf16, {OC, C}, false);
    auto [dy, dys] = in(DType::bf16, {BT, OC}, false);
    auto [dx, dxs] = out(DType::bf16, {BT, C});
    auto [dw, dws] = out(DType::bf16, {OC, C});
    auto [db, dbs] = out(DType::bf16, {OC});
    ops::matmul_backward(&dx, &dw, &db, dy, x, w, false, cs);
    ops::matmul_backward(&dxs, &dws, &dbs, dys, xs, ws, false, ss, ops::MatmulAlgo::mma);
    EXPECT_LE(test::rel_l2(dxs, dx), 1e-2) << name(sh) << " dinp";
    EXPECT_LE(test::rel_l2(dws, dw), 1e-2) << name(sh) << " dweight";
    EXPECT_LE(test::rel_l2(dbs, db), 1e-2) << name(sh) << " dbias";
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, SimtMatmulMma, ::testing::Values("forward", "reverse", "random"));

}  // namespace
}  // namespace parbench
