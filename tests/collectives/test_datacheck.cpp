// The data check's expected values: exact for every op but avg on floating types, whose tolerance must accept
// both sum-then-divide and NCCL's sum of inputs pre-multiplied by 1/n (which differ at 3, 5, 6 and 7 ranks) and
// still refuse a wrong average.
#include <gtest/gtest.h>

#include <cmath>

#include "collectives/datacheck.h"
#include "base/dtype.h"

namespace parbench::datacheck {
namespace {

// Rounds to the stored type, as a GPU's arithmetic in that type does after every operation.
double in_type(DType t, double v) {
  switch (t) {
    case DType::f32: return double(float(v));
    case DType::f16: return double(f16_to_float(float_to_f16(float(v))));
    case DType::bf16: return double(bf16_to_float(float_to_bf16(float(v))));
    default: return v;
  }
}

// NCCL's ncclAvg for floating types: sum over ranks (in rank order) of input * (1/n), rounding every step.
double nccl_avg(DType t, int n, std::uint64_t seed, std::size_t i) {
  const double scale = in_type(t, 1.0 / n);
  double acc = 0;
  for (int k = 0; k < n; ++k) {
    const double term = in_type(t, input_value(t, ReduceOp::avg, n, seed, k, i) * scale);
    acc = k == 0 ? term : in_type(t, acc + term);
  }
  return acc;
}

TEST(DataCheck, FloatAvgAcceptsNcclsPremultipliedSum) {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (int n : {2, 3, 4, 5, 6, 7, 8}) {
      int differing = 0, refusable = 0;
      for (std::size_t i = 0; i < 2000; ++i) {
        const Expected e = expected_value(Collective::allreduce, t, ReduceOp::avg, n, 0, 42, 0, 2000, i);
        const double nccl = nccl_avg(t, n, 42, i);
        differing += nccl != e.value;
        ASSERT_TRUE(matches(nccl, e)) << dtype_name(t) << " at " << n << " ranks, element " << i << ": NCCL's "
                                      << nccl << " vs " << e.value << " +- " << e.tolerance;
        // A wrong average (the sum) is refused wherever it is not within rounding of the right one.
        if (std::fabs(e.value) * (n - 1) > 2 * e.tolerance) {
          ++refusable;
          EXPECT_FALSE(matches(e.value * n, e)) << dtype_name(t) << " " << n << " " << i;
        }
      }
      if (t != DType::f64 && (n == 3 || n == 7)) {
        EXPECT_GT(differing, 0) << "the two roundings must differ here";
      }
      EXPECT_GT(refusable, 1000);
    }
}

TEST(DataCheck, EverythingElseIsExact) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max, ReduceOp::min}) {
    const Expected e = expected_value(Collective::allreduce, DType::f32, op, 3, 0, 1, 0, 10, 4);
    EXPECT_EQ(e.tolerance, 0);
    EXPECT_TRUE(matches(e.value, e));
    EXPECT_FALSE(matches(std::nextafter(e.value, 1e9), e));
  }
  const Expected avg_int = expected_value(Collective::allreduce, DType::i32, ReduceOp::avg, 3, 0, 1, 0, 10, 4);
  EXPECT_EQ(avg_int.tolerance, 0);
  EXPECT_FALSE(matches(std::nan(""), avg_int));
}

}  // namespace
}  // namespace parbench::datacheck
