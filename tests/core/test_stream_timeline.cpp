#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "core/stream_timeline.h"

namespace parbench {

using Lane = StreamTimeline::Lane;

TEST(Overlap, KnownIntervals) {
  // Compute busy [0, 10) and [20, 30); communication [5, 25): 5 + 5 of its 20 ms under compute.
  EXPECT_DOUBLE_EQ(overlap_fraction({{Lane::compute, 0, 10}, {Lane::compute, 20, 30}, {Lane::communication, 5, 25}}),
                   0.5);
  // Overlapping compute intervals count once: [0, 8) and [4, 12) cover [0, 12); communication [10, 14): 2 of 4.
  EXPECT_DOUBLE_EQ(overlap_fraction({{Lane::compute, 0, 8}, {Lane::compute, 4, 12}, {Lane::communication, 10, 14}}),
                   0.5);
  EXPECT_DOUBLE_EQ(overlap_fraction({{Lane::compute, 0, 10}, {Lane::communication, 2, 3}}), 1.0);
  EXPECT_DOUBLE_EQ(overlap_fraction({{Lane::compute, 0, 10}, {Lane::communication, 10, 12}}), 0.0);
  EXPECT_DOUBLE_EQ(overlap_fraction({{Lane::compute, 0, 10}}), 0.0);  // no communication
  EXPECT_DOUBLE_EQ(overlap_fraction({}), 0.0);
}

TEST(Overlap, MatchesAMillisecondGridOnRandomIntervals) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<StreamTimeline::Interval> iv;
    std::vector<bool> busy(100, false);
    std::vector<std::pair<int, int>> comm;
    for (int i = 0; i < 6; ++i) {
      int a = int(rng() % 100), b = int(rng() % 100);
      if (a > b) std::swap(a, b);
      const bool is_comm = rng() % 2;
      iv.push_back({is_comm ? Lane::communication : Lane::compute, double(a), double(b)});
      if (is_comm) comm.emplace_back(a, b);
      else for (int t = a; t < b; ++t) busy[std::size_t(t)] = true;
    }
    double total = 0, under = 0;
    for (auto [a, b] : comm)
      for (int t = a; t < b; ++t) total += 1, under += busy[std::size_t(t)] ? 1 : 0;
    EXPECT_NEAR(overlap_fraction(iv), total > 0 ? under / total : 0, 1e-12) << "trial " << trial;
  }
}

TEST(StreamTimeline, HostIntervalsAreOrderedAndReusedAcrossSteps) {
  StreamTimeline t{Device{}};
  Stream s{Device{}};
  for (int step = 0; step < 2; ++step) {
    t.start(s);
    const int a = t.open(Lane::compute, s);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int b = t.open(Lane::communication, s);
    t.close(a, s);
    t.close(b, s);
    const auto iv = t.intervals();
    ASSERT_EQ(iv.size(), 2u);
    EXPECT_EQ(iv[0].lane, Lane::compute);
    EXPECT_GE(iv[0].end_ms - iv[0].begin_ms, 2.0);
    EXPECT_LE(iv[0].begin_ms, iv[1].begin_ms);
    EXPECT_LE(iv[1].begin_ms, iv[0].end_ms);
  }
  EXPECT_THROW(t.close(7, s), Error);
}

}  // namespace parbench
