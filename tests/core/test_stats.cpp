#include <gtest/gtest.h>

#include <random>

#include "core/stats.h"

namespace parbench {

TEST(Stats, MedianOfOddEvenAndEmptySeries) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({7}), 7);
  EXPECT_EQ(median({5, 1, 3}), 3);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({2, 2, 9, 9}), 5.5);
}

TEST(Stats, MedianMatchesTheSortedMiddleOnRandomSeries) {
  std::mt19937 rng(11);
  for (int n = 1; n < 40; ++n) {
    std::vector<double> v(n);
    for (double& x : v) x = std::uniform_int_distribution<int>(-50, 50)(rng);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const double expect = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    EXPECT_EQ(median(v), expect) << "n " << n;
  }
}

}  // namespace parbench
