// See watchdog.h. Every thread that arms a watch gets a slot (registered once, never freed: threads are few);
// one detached thread looks at the slots every few milliseconds. The caller reads no clock: arming bumps the
// slot's generation, and the watchdog times a generation from when it first sees it armed, so a watch fires
// between its timeout and its timeout plus two periods. A generation re-read after copying the description
// tells whether the copy belongs to the watch that expired.
#include "collectives/watchdog.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace parbench {
namespace {

struct Slot {
  std::atomic<bool> armed{false};
  std::atomic<std::uint64_t> generation{0};
  WatchedCall call;
  WatchdogAction action = nullptr;
  // The watchdog's own: the generation it last saw armed, and since when.
  std::uint64_t seen = 0;
  Clock::time_point seen_at{};
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

void look_at(Slot& s, Clock::time_point now) {
  if (!s.armed.load(std::memory_order_acquire)) return;
  const std::uint64_t gen = s.generation.load(std::memory_order_acquire);
  if (gen != s.seen) {
    s.seen = gen, s.seen_at = now;
    return;
  }
  const WatchedCall call = s.call;
  const WatchdogAction action = s.action;
  if (std::chrono::duration<double>(now - s.seen_at).count() < call.timeout_s) return;
  if (!s.armed.load(std::memory_order_acquire) || s.generation.load(std::memory_order_acquire) != gen) return;
  if (action) action(watchdog_report(call));
}

void watch_loop() {
  for (;;) {
    std::this_thread::sleep_for(kPeriod);
    std::vector<Slot*> slots;
    {
      std::lock_guard lock(registry().mu);
      slots = registry().slots;
    }
    const auto now = Clock::now();
    for (Slot* s : slots) look_at(*s, now);
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

void watchdog_arm(const WatchedCall& call, WatchdogAction action) {
  Slot& s = my_slot();
  s.call = call;
  s.action = action;
  // One writer per slot (its thread): a plain increment, no locked instruction on every call.
  s.generation.store(s.generation.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  s.armed.store(true, std::memory_order_release);
}

void watchdog_disarm() { my_slot().armed.store(false, std::memory_order_release); }

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
