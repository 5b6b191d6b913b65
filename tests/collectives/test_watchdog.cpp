// The watchdog (collectives/communicator/watchdog.h): an expired watch reports the call and what the thread was measuring, a
// watch disarmed in time never fires, and re-arming while the watchdog thread reads the slot is race free (the
// ThreadSanitizer stage of scripts/test.sh runs this; a plain copy of the description was a data race).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "collectives/table/measurement.h"
#include "collectives/communicator/watchdog.h"

namespace {

using namespace parbench;
using ::testing::HasSubstr;

std::mutex g_mu;
std::string g_report;
std::atomic<int> g_fired{0};

// Instead of ending the process: keep the report.
void keep_report(const std::string& report) {
  std::lock_guard lock(g_mu);
  g_report = report;
  g_fired.fetch_add(1);
}

WatchedCall call(double timeout_s) {
  WatchedCall c;
  c.rank = 3, c.ranks = 4, c.coll = Collective::allreduce, c.impl = "mpi", c.count = 1024, c.bytes = 4096;
  c.dtype = DType::f32, c.timeout_s = timeout_s;
  return c;
}

TEST(Watchdog, ExpiredWatchNamesTheCallAndTheMeasurement) {
  g_fired = 0;
  std::thread t([] {
    MeasurementScope measuring("allreduce/ring of 1 MiB (the user's row)", Collective::allreduce, "ring");
    WatchGuard watch(call(0.05), keep_report);
    for (int i = 0; i < 200 && g_fired == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  t.join();
  ASSERT_GE(g_fired.load(), 1);
  std::lock_guard lock(g_mu);
  EXPECT_THAT(g_report, HasSubstr("rank 3: while measuring allreduce/ring of 1 MiB (the user's row), the helper "
                                  "call allreduce/mpi of 4096 bytes (1024 x f32 per rank, 4 ranks) did not finish "
                                  "within the timeout of 0.05 s"));
}

TEST(Watchdog, DisarmedInTimeNeverFiresAndRearmingIsRaceFree) {
  g_fired = 0;
  std::thread t([] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    long calls = 0;
    while (std::chrono::steady_clock::now() < until) {  // re-armed far faster than the watchdog looks
      WatchedCall c = call(5);
      c.count = std::size_t(calls++);
      WatchGuard watch(c, keep_report);
    }
    EXPECT_GT(calls, 1000);
    // Calls that outlast the watchdog's period, so that it copies their description, each followed at once by
    // the next call's arming, which rewrites it.
    for (int i = 0; i < 6; ++i) {
      WatchGuard watch(call(5), keep_report);
      std::this_thread::sleep_for(std::chrono::milliseconds(45));
    }
  });
  t.join();
  EXPECT_EQ(g_fired.load(), 0);
}

}  // namespace
