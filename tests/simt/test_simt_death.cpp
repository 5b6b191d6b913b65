// simt's fatal diagnostics: divergent barriers, deadlocks, fiber stack overflow and misuse abort
// the process with a message that says what and where (gtest death tests).
#include <gtest/gtest.h>

#include "tests/simt/selftest_kernels.h"
#include "device/simt/simt_device.h"
#include "simt_test_util.h"

namespace k = parbench::simt_kernels;

class SimtDeath : public simt_test::ScheduleTest {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // the process has a pool of OS threads
    simt_test::ScheduleTest::SetUp();
  }
};
SIMT_ALL_SCHEDULES(SimtDeath);

TEST_P(SimtDeath, DivergentBarrierSitesAbortNamingBoth) {
  std::vector<int> out(64, 0);
  EXPECT_DEATH(k::divergent_barrier(out.data(), nullptr),
               "simt: divergent __syncthreads in kernel divergent_barrier_kernel, block \\(0,0,0\\): thread "
               "\\([0-9]+,0,0\\) waits at [^ ]*selftest_kernels.cu:[0-9]+ while thread \\([0-9]+,0,0\\) waits at "
               "[^ ]*selftest_kernels.cu:[0-9]+");
}

TEST_P(SimtDeath, DeadlockAbortsWithEachThreadsState) {
  std::vector<int> out(32, 0);
  EXPECT_DEATH(k::deadlock(out.data(), nullptr),
               "simt: deadlock in kernel deadlock_kernel, block \\(0,0,0\\): no thread of the block can continue");
  EXPECT_DEATH(k::deadlock(out.data(), nullptr), "threads \\(0,0,0\\)..\\(0,0,0\\) \\[0-0\\]: waiting in __shfl_sync "
                                                 "\\(mask 0xffffffff\\) at [^ ]*selftest_kernels.cu:[0-9]+");
  EXPECT_DEATH(k::deadlock(out.data(), nullptr),
               "threads \\(1,0,0\\)..\\(31,0,0\\) \\[1-31\\]: waiting at __syncthreads at [^ ]*selftest_kernels.cu");
}

TEST_P(SimtDeath, StackOverflowIsCaughtByTheGuardPage) {
  std::vector<int> out(32, 0);
  EXPECT_DEATH(k::stack_overflow(out.data(), 1 << 22, nullptr),
               "simt: stack overflow in kernel stack_overflow_kernel, block \\(0,0,0\\), thread \\([0-9]+,0,0\\): the "
               "[0-9]+-byte fiber stack ran into its guard page");
}

TEST_P(SimtDeath, BadShuffleWidthAborts) {
  std::vector<int> in(128, 1), out(512, 0);
  EXPECT_DEATH(k::shuffle_variants(out.data(), in.data(), 128, 0, 1, 1, 12, nullptr),
               "__shfl_sync at [^ ]*selftest_kernels.cu:[0-9]+ in kernel shuffle_variants_kernel, block \\([01],0,0\\): "
               "width 12 is not a power of two in 1..32");
}

TEST(SimtDeathOutside, BarrierOutsideAKernelAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(parbench::simt::__syncthreads(), "simt: __syncthreads called outside a simt kernel");
}

// A deep recursion that overflows the default stack runs with a larger one.
TEST(SimtStack, LargerStacksHoldDeeperRecursion) {
  const std::size_t saved = parbench::simt::stack_size();
  parbench::simt::set_stack_size(8u << 20);
  std::vector<int> out(32, -1);
  const int depth = 3000;  // about 1.6 MB of frames; far beyond the 256 KiB default
  k::stack_overflow(out.data(), depth, nullptr);
  parbench::simt::set_stack_size(saved);
  int want = 0;
  for (int d = 1; d <= depth; ++d) want += static_cast<signed char>(d);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[std::size_t(t)], want) << t;
}
