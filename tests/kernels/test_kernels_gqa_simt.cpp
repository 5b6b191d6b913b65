// Grouped-query attention kernels on simt (plain, scalar flash in f32 and bf16, and the tensor-core flash kernels
// at bf16 head sizes 64 and 128) under forward, reverse and random thread schedules: with KV kv heads they give
// bit for bit what they give on K/V repeated by hand into multi-head attention for out, att, lse and dq (the same
// arithmetic on the same values), a kv head's dk and dv match the sum over its group of the repeated run, and all
// of it matches the cpu reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/ops.h"
#include "tests/kernels/gqa_test_util.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/simt_pair_fixture.h"

namespace parbench {
namespace {

using test::GqaDims;

struct GqaCase {
  GqaDims g;
  DType d;
};
// Scalar kernels at small heads (groups of 2, and multi-query), the tensor-core ones at hs 64 and 128 (65 queries:
// two 64-row tiles, the second ragged).
const GqaCase kCases[] = {{{2, 7, 4, 2, 8}, DType::f32},  {{1, 40, 4, 1, 12}, DType::f32},
                          {{2, 7, 4, 2, 8}, DType::bf16}, {{1, 65, 4, 2, 64}, DType::bf16},
                          {{1, 65, 2, 1, 128}, DType::bf16}};

std::string name(const GqaCase& c) {
  const GqaDims& g = c.g;
  return "B" + std::to_string(g.B) + " T" + std::to_string(g.T) + " NH" + std::to_string(g.NH) + " KV" +
         std::to_string(g.KV) + " hs" + std::to_string(g.hs) + " " + std::string(dtype_name(c.d));
}

class SimtGqa : public test::SimtPairTest {
 protected:
  Tensor in(DType d, Shape s, double lo, double hi) {
    Tensor t = make(simt_alloc, d, s);
    test::fill_uniform(t, rng, lo, hi);
    return t;
  }
  Tensor nan(TrackedAllocator& a, DType d, Shape s) {
    Tensor t = make(a, d, s);
    test::fill_nan(t);
    return t;
  }
  Tensor copy_to(TrackedAllocator& a, const Tensor& src) {
    Tensor t = make(a, src.dtype(), src.shape());
    test::copy_into(t, src);
    return t;
  }
  // Runs one pair (plain or flash) on inp; fills out, the statistics and dinp.
  void run(bool flash, const Stream& st, TrackedAllocator& a, const Tensor& inp, const Tensor& dout, int NH,
           Tensor& out, Tensor& stats, Tensor& dinp) {
    const Shape sh = inp.shape();
    const int B = int(sh[0]), T = int(sh[1]);
    out = nan(a, inp.dtype(), dout.shape());
    stats = nan(a, DType::f32, flash ? Shape{B, NH, T} : Shape{B, NH, T, T});
    dinp = nan(a, inp.dtype(), sh);
    Tensor scratch = nan(a, DType::f32, stats.shape());
    if (flash) {
      ops::flash_attention_forward(out, stats, inp, NH, st);
      ops::flash_attention_backward(dinp, scratch, dout, inp, out, stats, NH, st);
    } else {
      ops::attention_forward(out, stats, inp, NH, st);
      ops::attention_backward(dinp, scratch, dout, inp, stats, NH, st);
    }
    st.synchronize();
  }
};

TEST_P(SimtGqa, EqualsMultiHeadOnRepeatedKvAndTheReference) {
  for (const GqaCase& c : kCases) {
    const GqaDims& g = c.g;
    const int B = g.B, T = g.T, C = g.C(), NH = g.NH;
    Tensor inp = in(c.d, {B, T, g.width()}, -2, 2), dout = in(c.d, {B, T, C}, -1, 1);
    Tensor rep = make(simt_alloc, c.d, {B, T, 3 * C});
    test::repeat_kv(rep, inp, g);
    Tensor inp_c = copy_to(cpu_alloc, inp), dout_c = copy_to(cpu_alloc, dout);
    for (bool flash : {false, true}) {
      if (!flash && g.hs > 16) continue;  // the plain kernels' (B,NH,T,T) work is kept to the small cases
      const std::string what = name(c) + (flash ? " flash" : " plain");
      Tensor o, st, dx, orep, strep, dxrep, oc, stc, dxc;
      run(flash, ss, simt_alloc, inp, dout, NH, o, st, dx);
      run(flash, ss, simt_alloc, rep, dout, NH, orep, strep, dxrep);
      run(flash, cs, cpu_alloc, inp_c, dout_c, NH, oc, stc, dxc);
      EXPECT_EQ(test::to_vector(o), test::to_vector(orep)) << what << " out";
      EXPECT_EQ(test::to_vector(st), test::to_vector(strep)) << what << " att/lse";
      const std::vector<double> got = test::to_vector(dx), folded = test::fold_groups(dxrep, g);
      for (std::size_t i = 0; i < got.size(); ++i)
        if (int(i % std::size_t(g.width())) < C) {
          ASSERT_EQ(got[i], folded[i]) << what << " dq at " << i;
        }
      // The kv pass sums the group in fp32 before one rounding; the repeated run rounds each head's part.
      const double e_fold = test::rel_l2(got, folded), e_ref = test::rel_l2(got, test::to_vector(dxc));
      const double e_out = test::rel_l2(o, oc);
      std::printf("[simt-err] gqa %-30s %-8s out %.2e dinp vs folded %.2e vs ref %.2e\n", what.c_str(),
                  GetParam().c_str(), e_out, e_fold, e_ref);
      const bool bf = c.d == DType::bf16;
      EXPECT_LE(e_fold, bf ? 1e-2 : 1e-6) << what;
      EXPECT_LE(e_out, bf ? 1e-2 : 1e-5) << what;
      EXPECT_LE(e_ref, bf ? 2e-2 : 1e-5) << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, SimtGqa, ::testing::Values("forward", "reverse", "random"));

}  // namespace
}  // namespace parbench
