// The tensor-core flash attention (kernels/flash_mma_fwd.h, flash_mma_bwd.h: bf16, head sizes 64 and 128) on simt
// against the cpu reference, forward and backward, at sequence lengths below, at and past the 64-row tiles (odd
// ones included), multi-head, grouped-query and multi-query, with NaN-poisoned outputs, under forward, reverse and
// random thread schedules.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "device/simt/simt_runtime.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/simt_pair_fixture.h"

namespace parbench {
namespace {

// KV kv heads (0: NH, multi-head): inp is (B, T, (NH + 2 KV) hs).
struct AttnCase {
  int B, T, NH, hs, KV = 0;
  int kv() const { return KV > 0 ? KV : NH; }
  int width() const { return (NH + 2 * kv()) * hs; }
};
// T = 1 (one row), 63 and 65 about a tile edge, 130 (two full 64-row tiles and a partial one; five query tiles of
// 32 in the dK/dV kernel at head size 128); two batches and two heads once; grouped-query (two query heads per kv
// head) and multi-query at both head sizes.
const AttnCase kCases[] = {{1, 1, 1, 64},      {2, 65, 2, 64},     {1, 130, 1, 64},   {1, 63, 1, 128},
                           {1, 130, 1, 128},   {2, 65, 4, 64, 2},  {1, 130, 3, 64, 1}, {1, 97, 4, 128, 2},
                           {1, 65, 2, 128, 1}};

std::string name(const AttnCase& a) {
  return "B" + std::to_string(a.B) + " T" + std::to_string(a.T) + " NH" + std::to_string(a.NH) + " KV" +
         std::to_string(a.kv()) + " hs" + std::to_string(a.hs);
}

// ||out - ref|| / ||ref|| over elements [lo, lo + n) of every row of `row` elements (one part of dinp).
double part_error(const std::vector<double>& out, const std::vector<double>& ref, std::size_t row, std::size_t lo,
                  std::size_t n) {
  std::vector<double> o, r;
  for (std::size_t base = 0; base < out.size(); base += row)
    for (std::size_t i = lo; i < lo + n; ++i) {
      o.push_back(out[base + i]);
      r.push_back(ref[base + i]);
    }
  return test::rel_l2(o, r);
}

class SimtFlashMma : public test::SimtPairTest {
 protected:
  // The same random values on the cpu and simt.
  std::pair<Tensor, Tensor> in(Shape s, double lo, double hi) {
    Tensor c = make(cpu_alloc, DType::bf16, s), g = make(simt_alloc, DType::bf16, s);
    test::fill_uniform(c, rng, lo, hi);
    test::copy_into(g, c);
    return {std::move(c), std::move(g)};
  }
};

TEST_P(SimtFlashMma, ForwardMatchesTheReference) {
  for (const auto& a : kCases) {
    const int C = a.NH * a.hs;
    // Scores of a few units: the softmax is neither flat nor one-hot.
    auto [x, xs] = in({a.B, a.T, a.width()}, -2, 2);
    auto [o, os] = out(DType::bf16, {a.B, a.T, C});
    auto [l, ls] = out(DType::f32, {a.B, a.NH, a.T});
    ops::flash_attention_forward(o, l, x, a.NH, cs);
    ops::flash_attention_forward(os, ls, xs, a.NH, ss);
    const double eo = test::rel_l2(os, o), el = test::rel_l2(ls, l);
    std::printf("[simt-err] flash_mma forward %-20s %-8s out %.2e lse %.2e\n", name(a).c_str(), GetParam().c_str(), eo,
                el);
    // The probabilities enter P V rounded to bf16 (2^-9 relative), the output is rounded to bf16 again; the
    // log-sum-exp comes from fp32 scores of the same bf16 inputs.
    EXPECT_LE(eo, 1e-2) << name(a) << " out";
    EXPECT_LE(el, 1e-5) << name(a) << " lse";
  }
}

TEST_P(SimtFlashMma, BackwardMatchesTheReference) {
  for (const auto& a : kCases) {
    const int C = a.NH * a.hs;
    auto [x, xs] = in({a.B, a.T, a.width()}, -2, 2);
    auto [dy, dys] = in({a.B, a.T, C}, -1, 1);
    auto [o, os] = out(DType::bf16, {a.B, a.T, C});
    auto [l, ls] = out(DType::f32, {a.B, a.NH, a.T});
    auto [dx, dxs] = out(DType::bf16, {a.B, a.T, a.width()});
    auto [sc, scs] = out(DType::f32, {a.B, a.NH, a.T});
    ops::flash_attention_forward(o, l, x, a.NH, cs);
    ops::flash_attention_forward(os, ls, xs, a.NH, ss);
    ops::flash_attention_backward(dx, sc, dy, x, o, l, a.NH, cs);
    ops::flash_attention_backward(dxs, scs, dys, xs, os, ls, a.NH, ss);
    const std::vector<double> got = test::to_vector(dxs), want = test::to_vector(dx);
    const char* parts[] = {"dq", "dk", "dv"};
    const std::size_t kvc = std::size_t(a.kv() * a.hs), lo[] = {0, std::size_t(C), C + kvc},
                      n[] = {std::size_t(C), kvc, kvc};
    for (int p = 0; p < 3; ++p) {
      const double e = part_error(got, want, std::size_t(a.width()), lo[p], n[p]);
      std::printf("[simt-err] flash_mma backward %-20s %-8s %s %.2e\n", name(a).c_str(), GetParam().c_str(), parts[p],
                  e);
      // bf16 probabilities and score gradients feed the products; dq and dk sum T of them.
      EXPECT_LE(e, 2e-2) << name(a) << " " << parts[p];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, SimtFlashMma, ::testing::Values("forward", "reverse", "random"));

}  // namespace
}  // namespace parbench
