// Shared helpers of the simt tests: fresh random inputs, the schedules every kernel test runs under.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "device/simt/simt_runtime.h"

namespace simt_test {

// A fresh seed per test, printed on failure so a failing input can be replayed.
inline std::mt19937_64 fresh_rng(std::uint64_t* seed_out = nullptr) {
  std::uint64_t seed = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  if (seed_out) *seed_out = seed;
  return std::mt19937_64(seed);
}

inline std::vector<int> random_ints(std::mt19937_64& rng, std::size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs a kernel test under one schedule and restores the previous one afterwards.
class ScheduleTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    saved_ = parbench::simt::schedule();
    parbench::simt::set_schedule(parbench::simt::parse_schedule(GetParam()));
  }
  void TearDown() override { parbench::simt::set_schedule(saved_); }

 private:
  parbench::simt::Schedule saved_;
};

inline std::string schedule_test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string s = info.param;
  for (auto& c : s)
    if (c == ':') c = '_';
  return s;
}

}  // namespace simt_test

#define SIMT_ALL_SCHEDULES(suite)                                                                     \
  INSTANTIATE_TEST_SUITE_P(Schedules, suite, ::testing::Values("forward", "reverse", "random:1", "random:987654321"), \
                           ::simt_test::schedule_test_name)
