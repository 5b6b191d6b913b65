// simt progress: a thread spinning on a flag another thread of its block sets, a deadline that expires, and two
// co-resident kernels launched from two host threads (two GPUs) passing tokens through each other's memory.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "device/simt/launch_spec.h"
#include "device/simt/simt_runtime.h"
#include "simt_test_util.h"
#include "tests/simt/spin_kernels.h"

namespace k = parbench::simt_kernels;

namespace {
constexpr long long kSecond = 1000000000;
class SimtSpin : public simt_test::ScheduleTest {};
}  // namespace

TEST_P(SimtSpin, AThreadSpinningOnItsBlockFindsTheFlagSet) {
  for (int block : {2, 64, 1024}) {
    int out[2] = {-1, -1};
    k::spin_in_block(out, block, 20 * kSecond, nullptr);
    EXPECT_EQ(out[0], 42) << "block " << block;
    EXPECT_EQ(out[1], 0) << "block " << block << ": the deadline passed before the flag was seen";
  }
}

TEST_P(SimtSpin, ADeadlineExpiresWhenTheFlagIsNeverSet) {
  unsigned flag = 0;
  long long out[2] = {-1, -1};
  const auto start = std::chrono::steady_clock::now();
  k::spin_until_deadline(out, &flag, 50000000, nullptr);  // 50 ms
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(out[0], 1);
  EXPECT_GE(out[1], 50000000);
  EXPECT_GE(waited, std::chrono::milliseconds(50));
  EXPECT_LT(waited, std::chrono::seconds(20));
}

// Two host threads, each the launching thread of one kernel (simt's launches are synchronous): same-index blocks
// wait only on each other, so the co-resident grids progress however the blocks are ordered.
TEST_P(SimtSpin, TwoKernelsPingPongThroughEachOthersMemory) {
  constexpr int kBlocks = 8, kRounds = 1000;
  std::vector<unsigned> flags[2] = {std::vector<unsigned>(kBlocks, 0), std::vector<unsigned>(kBlocks, 0)};
  std::vector<int> data[2] = {std::vector<int>(kBlocks, -1), std::vector<int>(kBlocks, -1)};
  std::vector<int> err[2] = {std::vector<int>(kBlocks, -1), std::vector<int>(kBlocks, -1)};
  auto side = [&](int role) {
    const int peer = 1 - role;
    k::ping_pong(flags[role].data(), data[role].data(), flags[peer].data(), data[peer].data(), err[role].data(),
                 kRounds, role, kBlocks, 60 * kSecond, nullptr);
  };
  std::thread a(side, 0), b(side, 1);
  a.join();
  b.join();
  for (int r = 0; r < 2; ++r)
    for (int blk = 0; blk < kBlocks; ++blk) {
      EXPECT_EQ(err[r][blk], 0) << "role " << r << " block " << blk;
      // Role 0 last received token 2*rounds, role 1 token 2*rounds - 1.
      EXPECT_EQ(flags[r][blk], unsigned(2 * kRounds - r)) << "role " << r << " block " << blk;
      EXPECT_EQ(data[r][blk], int(7 * (2 * kRounds - r) + blk)) << "role " << r << " block " << blk;
    }
}

// On one pool thread, blocks of a co-resident grid that wait for later blocks still finish: each block that spins
// brings another OS thread for the blocks not yet started.
TEST_P(SimtSpin, ACoResidentGridWhoseBlocksWaitOnEachOtherFinishesOnOneWorkerThread) {
  const int saved = parbench::simt::worker_threads();
  parbench::simt::set_worker_threads(1);
  constexpr int kBlocks = int(parbench::simt::detail::kResidentBlocks);
  std::vector<unsigned> flags(kBlocks, 0);
  std::vector<int> err(kBlocks, -1);
  k::chain(flags.data(), err.data(), kBlocks, 60 * kSecond, nullptr);
  parbench::simt::set_worker_threads(saved);
  for (int b = 0; b < kBlocks; ++b) {
    EXPECT_EQ(err[b], 0) << "block " << b;
    EXPECT_EQ(flags[b], 1u) << "block " << b;
  }
}

TEST(SimtCoResidency, TheLimitIsFourSmsOfEightBlocksAnd2048Threads) {
  using parbench::simt::detail::co_resident;
  using parbench::simt::detail::LaunchSpec;
  auto spec = [](unsigned grid, unsigned block) {
    return LaunchSpec{"k", {grid, 1, 1}, {block, 1, 1}, 0, nullptr, "f", 1};
  };
  EXPECT_TRUE(co_resident(spec(32, 256)));
  EXPECT_FALSE(co_resident(spec(33, 32)));
  EXPECT_TRUE(co_resident(spec(8, 1024)));
  EXPECT_FALSE(co_resident(spec(9, 1024)));
  EXPECT_FALSE(co_resident(LaunchSpec{"k", {4, 4, 4}, {1, 1, 1}, 0, nullptr, "f", 1}));
}

SIMT_ALL_SCHEDULES(SimtSpin);
