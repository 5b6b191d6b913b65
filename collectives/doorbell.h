// Doorbell: how a threads-mode rank sleeps until something it waits for may have happened. Whoever completes
// work for a rank (a copy into its buffer, the receipt of its send, an abort) rings that rank's doorbell, so a
// message wakes its own rank and no other. A waiter spins briefly when it has a core to itself, then sleeps on a
// futex until the next ring or its deadline.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace parbench {

class Doorbell {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // The rings so far. Take a ticket before checking the condition you wait for, then wait(ticket, ...): a ring
  // between the check and the wait is not lost.
  std::uint32_t ticket() const { return rings_.load(std::memory_order_seq_cst); }
  void ring();
  // Returns true after a ring since `ticket` (it may be for another waiter of this rank: check again), false at
  // `deadline`. Spins up to `spin` first.
  bool wait(std::uint32_t ticket, TimePoint deadline, std::chrono::nanoseconds spin);

 private:
  std::atomic<std::uint32_t> rings_{0};
  std::atomic<std::int32_t> sleepers_{0};  // so that a ring nobody sleeps through makes no system call
};

// The cores this process may run on (sched_getaffinity; hardware_concurrency elsewhere).
int usable_cores();

// How long a waiter spins before it sleeps when `threads` busy threads share `cores` cores: a little while when
// each has a core, not at all when they outnumber the cores (a spinner would keep the core from the thread it
// waits for).
std::chrono::nanoseconds spin_time(int threads, int cores);

}  // namespace parbench
