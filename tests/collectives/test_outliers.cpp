// --outliers' test on known values: the modified z-score over 3.5, twice the median and a tenth of the operation, a
// spread of equal values (no MAD), noise that stands apart by less than that, and two ranks (neither can stand apart).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "collective_bench/outliers.h"

namespace {

using parbench::own_time_outliers;

std::vector<int> ranks(const std::vector<parbench::RankOutlier>& o) {
  std::vector<int> r;
  for (const auto& x : o) r.push_back(x.rank);
  return r;
}

TEST(OwnTimeOutliers, TheRankThatStandsApart) {
  const auto o = own_time_outliers({1.0, 1.1, 0.9, 10.0, 1.0}, 10.0);
  ASSERT_EQ(ranks(o), std::vector<int>{3});
  EXPECT_DOUBLE_EQ(o[0].ratio, 10.0);  // over the median, 1.0
  // MAD: the median of |x - 1| = {0, 0.1, 0.1, 9, 0} is 0.1; z = 0.6745 x 9 / 0.1
  EXPECT_NEAR(o[0].z, 60.705, 1e-9);
}

TEST(OwnTimeOutliers, EqualOthersAndNoise) {
  EXPECT_EQ(ranks(own_time_outliers({2, 2, 2, 2, 9}, 9)), std::vector<int>{4});  // MAD 0: any rank over 2x stands apart
  EXPECT_TRUE(own_time_outliers({1.0, 1.2, 0.8, 1.1, 0.9, 1.9}, 2).empty());     // z over 3.5, but under 2x the median
  EXPECT_TRUE(own_time_outliers({1, 50}, 50).empty());                            // two ranks: which one?
  EXPECT_TRUE(own_time_outliers({}, 0).empty());
  EXPECT_EQ(ranks(own_time_outliers({5, 1, 1, 1, 1, 1, 1, 6}, 6)), (std::vector<int>{0, 7}));
  // 2.6 us of own time more than the others' in an 85 us operation: noise, not a straggler
  EXPECT_TRUE(own_time_outliers({2.2e-6, 4.8e-6, 2.1e-6, 2.3e-6}, 85e-6).empty());
}

// A row's cells and -J object: median, slowest and its rank, the ranks apart; each rank's iterations with -I.
TEST(OwnTimeOutliers, RowCellsAndJson) {
  parbench::HalfResult h;
  EXPECT_EQ(parbench::own_time_cells(h), std::vector<parbench::Cell>(4));  // no own times: four empty cells
  h.t.time = 10e-6;
  h.rank_own = {1e-6, 1.5e-6, 12e-6, 0.5e-6, 2e-6};
  const std::vector<parbench::Cell> c = parbench::own_time_cells(h);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_DOUBLE_EQ(std::get<double>(c[0]), 1.5);
  EXPECT_DOUBLE_EQ(std::get<double>(c[1]), 12);
  EXPECT_EQ(std::get<std::int64_t>(c[2]), 2);
  EXPECT_EQ(std::get<std::string>(c[3]), "2");
  h.rank_own = {20e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 30e-6};
  EXPECT_EQ(std::get<std::string>(parbench::own_time_cells(h)[3]), "0 7");
  EXPECT_EQ(std::get<std::int64_t>(parbench::own_time_cells(h)[2]), 7);
  h.per_iter.per_rank = {{1e-6, 2e-6}, {3e-6, 4e-6}};
  const auto j = parbench::own_time_json(h);
  EXPECT_EQ(j["outlier_ranks"].dump(), "[0,7]");
  EXPECT_EQ(j["own_us"].size(), 8u);
  EXPECT_DOUBLE_EQ(j["own_us"][7].get<double>(), 30);
  EXPECT_EQ(j["times_us"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["times_us"][1][0].get<double>(), 3);
}

}  // namespace
