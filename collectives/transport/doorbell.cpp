// Doorbell on Linux futexes (elsewhere: short sleeps between checks).
#include "collectives/transport/doorbell.h"

#include <algorithm>
#include <climits>
#include <thread>

#ifdef __linux__
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#endif

namespace parbench {

namespace {

using std::chrono::nanoseconds;
using SteadyClock = std::chrono::steady_clock;

// The longest single sleep: a bound on how late a missed wake-up could be noticed, and no overflow for far
// deadlines.
constexpr nanoseconds kLongestSleep = std::chrono::milliseconds(200);

#ifdef __linux__
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t), "futex word must be a plain 32-bit int");

std::uint32_t* futex_word(std::atomic<std::uint32_t>& a) { return reinterpret_cast<std::uint32_t*>(&a); }

// Sleeps while the word still holds `expected`, for at most `for_at_most`.
void futex_sleep(std::atomic<std::uint32_t>& word, std::uint32_t expected, nanoseconds for_at_most) {
  timespec ts{};
  ts.tv_sec = time_t(for_at_most.count() / 1'000'000'000);
  ts.tv_nsec = long(for_at_most.count() % 1'000'000'000);
  syscall(SYS_futex, futex_word(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, futex_word(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}
#else
void futex_sleep(std::atomic<std::uint32_t>&, std::uint32_t, nanoseconds for_at_most) {
  std::this_thread::sleep_for(std::min<nanoseconds>(for_at_most, std::chrono::microseconds(50)));
}
void futex_wake_all(std::atomic<std::uint32_t>&) {}
#endif

}  // namespace

void Doorbell::ring() {
  rings_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(rings_);
}

bool Doorbell::wait(std::uint32_t ticket, TimePoint deadline, const WaitPolicy& policy) {
  if (rings_.load(std::memory_order_acquire) != ticket) return true;
  if (policy.yield.count() > 0) {
    const TimePoint yield_end = std::min(deadline, SteadyClock::now() + policy.yield);
    do {
      std::this_thread::yield();
      if (rings_.load(std::memory_order_acquire) != ticket) return true;
    } while (SteadyClock::now() < yield_end);
  }
  // Announce the sleeper before the last check (both seq_cst), so a ring either sees it or is seen here.
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  bool rang = false;
  for (;;) {
    if (rings_.load(std::memory_order_seq_cst) != ticket) {
      rang = true;
      break;
    }
    const TimePoint now = SteadyClock::now();
    if (now >= deadline) break;
    futex_sleep(rings_, ticket, std::min<nanoseconds>(deadline - now, kLongestSleep));
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  return rang;
}

int usable_cores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1, int(std::thread::hardware_concurrency()));
}

WaitPolicy wait_policy(int threads, int cores) {
  using std::chrono::microseconds;
  return {threads > cores ? microseconds(100) : microseconds(1000)};
}

}  // namespace parbench
