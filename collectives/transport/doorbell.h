// Doorbell: how a threads-mode rank sleeps until something it waits for may have happened. Whoever completes
// work for a rank (a copy into its buffer, the receipt of its send, an abort) rings that rank's doorbell, so a
// message wakes its own rank and no other. A waiter first polls between yields of its core (a rank it waits for
// may be the next to run there), then sleeps on a futex until the next ring or its deadline. It never spins on
// the pause instruction: in a virtual machine pause loops make the hypervisor take the vCPU away (pause-loop
// exiting), and on the 2-core VM this was measured a few times slower than yielding.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace parbench {

// How a wait passes the time before it sleeps.
struct WaitPolicy {
  std::chrono::nanoseconds yield{0};  // polling, with sched_yield between checks, before sleeping
};

class Doorbell {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // The rings so far. Take a ticket before checking the condition you wait for, then wait(ticket, ...): a ring
  // between the check and the wait is not lost.
  std::uint32_t ticket() const { return rings_.load(std::memory_order_seq_cst); }
  void ring();
  // Returns true after a ring since `ticket` (it may be for another waiter of this rank: check again), false at
  // `deadline`. Polls with yields as `policy` says before sleeping.
  bool wait(std::uint32_t ticket, TimePoint deadline, const WaitPolicy& policy);

 private:
  std::atomic<std::uint32_t> rings_{0};
  std::atomic<std::int32_t> sleepers_{0};  // so that a ring nobody sleeps through makes no system call
};

// The cores this process may run on (sched_getaffinity; hardware_concurrency elsewhere).
int usable_cores();

// The wait for `threads` busy threads sharing `cores` cores: up to 1 ms of yields when each has a core (on a
// loaded machine a core given up by yielding comes back sooner than one given up by sleeping), 100 us when they
// outnumber the cores (longer, the yielding ranks would mostly hand the core to each other while the one they
// wait for sleeps in the queue behind them).
WaitPolicy wait_policy(int threads, int cores);

}  // namespace parbench
