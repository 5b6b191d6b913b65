// See watchdog.h. Every thread that arms a watch gets a slot (registered once, never freed: threads are few);
// one detached thread looks at the armed slots every few milliseconds. Arming writes the call's description,
// then publishes the deadline; a generation counter tells the watchdog whether the description it copied
// belongs to the deadline it saw.
#include "collectives/watchdog.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace parbench {
namespace {

struct Slot {
  std::atomic<std::int64_t> deadline{0};  // Clock ticks since epoch; 0: disarmed
  std::atomic<std::uint64_t> generation{0};
  WatchedCall call;
  WatchdogAction action = nullptr;
};

struct Registry {
  std::mutex mu;
  std::vector<Slot*> slots;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: the detached watchdog may outlive static destructors
  return *r;
}

// How late the watchdog may notice an expired watch: small beside any timeout a user gives (>= 1 s in practice).
constexpr auto kPeriod = std::chrono::milliseconds(20);

void watch_loop() {
  for (;;) {
    std::this_thread::sleep_for(kPeriod);
    const std::int64_t now = Clock::now().time_since_epoch().count();
    std::vector<Slot*> slots;
    {
      std::lock_guard lock(registry().mu);
      slots = registry().slots;
    }
    for (Slot* s : slots) {
      const std::uint64_t gen = s->generation.load(std::memory_order_acquire);
      const std::int64_t d = s->deadline.load(std::memory_order_acquire);
      if (d == 0 || d > now) continue;
      const WatchedCall call = s->call;
      const WatchdogAction action = s->action;
      if (s->generation.load(std::memory_order_acquire) != gen || s->deadline.load() != d) continue;  // re-armed
      if (action) action(watchdog_report(call));
    }
  }
}

Slot& my_slot() {
  thread_local Slot* slot = [] {
    auto* s = new Slot;  // lives as long as the process: the watchdog may still look at it
    static std::once_flag started;
    std::call_once(started, [] { std::thread(watch_loop).detach(); });
    std::lock_guard lock(registry().mu);
    registry().slots.push_back(s);
    return s;
  }();
  return *slot;
}

}  // namespace

void watchdog_arm(Deadline deadline, const WatchedCall& call, WatchdogAction action) {
  Slot& s = my_slot();
  s.deadline.store(0, std::memory_order_relaxed);
  // One writer per slot (its thread): a plain increment, no locked instruction on every call.
  s.generation.store(s.generation.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  s.call = call;
  s.action = action;
  s.deadline.store(deadline.time_since_epoch().count(), std::memory_order_release);
}

void watchdog_disarm() { my_slot().deadline.store(0, std::memory_order_release); }

std::string watchdog_report(const WatchedCall& c) {
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", c.timeout_s);
  return "rank " + std::to_string(c.rank) + ": " + std::string(collective_name(c.coll)) + "/" +
         std::string(c.impl) + " of " + std::to_string(c.bytes) + " bytes (" + std::to_string(c.count) + " x " +
         std::string(dtype_name(c.dtype)) + " per rank, " + std::to_string(c.ranks) +
         " ranks) did not finish within the timeout of " + timeout +
         " s: the watchdog stopped the job (a blocking library call cannot be interrupted)";
}

}  // namespace parbench
