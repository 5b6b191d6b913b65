// See watchdog.h. Every thread that arms a watch gets a slot (registered once, never freed: threads are few);
// one detached thread looks at the slots every few milliseconds. The caller reads no clock: arming bumps the
// slot's generation, and the watchdog times a generation from when it first sees it armed, so a watch fires
// between its timeout and its timeout plus two periods.
//
// The description of the call is a seqlock: the owner rewrites the fields (each an atomic, so that a concurrent
// read is never a data race) between an odd and an even generation, and the watchdog keeps a copy only when the
// generation was even and unchanged around it. Arming stays a handful of plain stores on x86, with no lock.
#include "collectives/communicator/watchdog.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "collectives/table/measurement.h"

namespace parbench {
namespace {

struct Slot {
  std::atomic<bool> armed{false};
  std::atomic<std::uint64_t> generation{0};  // odd while the owner rewrites the fields below
  std::atomic<int> rank{0}, ranks{1}, coll{0}, dtype{0};
  std::atomic<const char*> impl_data{nullptr};
  std::atomic<std::size_t> impl_size{0}, count{0}, bytes{0};
  std::atomic<double> timeout_s{0};
  std::atomic<WatchdogAction> action{nullptr};
  const MeasurementRecord* measurement = nullptr;  // the owner thread's, set before the slot is shared
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

constexpr auto relaxed = std::memory_order_relaxed;

WatchedCall copy_call(const Slot& s) {
  WatchedCall c;
  c.rank = s.rank.load(relaxed), c.ranks = s.ranks.load(relaxed);
  c.coll = Collective(s.coll.load(relaxed)), c.dtype = DType(s.dtype.load(relaxed));
  c.impl = std::string_view(s.impl_data.load(relaxed), s.impl_size.load(relaxed));
  c.count = s.count.load(relaxed), c.bytes = s.bytes.load(relaxed);
  c.timeout_s = s.timeout_s.load(relaxed);
  return c;
}

void look_at(Slot& s, Clock::time_point now) {
  if (!s.armed.load(std::memory_order_acquire)) return;
  const std::uint64_t gen = s.generation.load(std::memory_order_acquire);
  if (gen & 1) return;  // being rewritten
  if (gen != s.seen) {
    s.seen = gen, s.seen_at = now;
    return;
  }
  const WatchedCall call = copy_call(s);
  const WatchdogAction action = s.action.load(relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (!s.armed.load(relaxed) || s.generation.load(relaxed) != gen) return;  // a new call: the copy may be torn
  if (std::chrono::duration<double>(now - s.seen_at).count() < call.timeout_s) return;
  if (action) action(watchdog_report(call, s.measurement));
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
    s->measurement = &this_thread_measurement();
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
  // One writer per slot (its thread): plain increments, no locked instruction on every call.
  const std::uint64_t gen = s.generation.load(relaxed);
  s.generation.store(gen + 1, relaxed);  // odd: rewriting
  std::atomic_thread_fence(std::memory_order_release);
  s.rank.store(call.rank, relaxed), s.ranks.store(call.ranks, relaxed);
  s.coll.store(int(call.coll), relaxed), s.dtype.store(int(call.dtype), relaxed);
  s.impl_data.store(call.impl.data(), relaxed), s.impl_size.store(call.impl.size(), relaxed);
  s.count.store(call.count, relaxed), s.bytes.store(call.bytes, relaxed);
  s.timeout_s.store(call.timeout_s, relaxed);
  s.action.store(action, relaxed);
  s.generation.store(gen + 2, std::memory_order_release);
  s.armed.store(true, std::memory_order_release);
}

void watchdog_disarm() { my_slot().armed.store(false, std::memory_order_release); }

std::string watchdog_report(const WatchedCall& c, const MeasurementRecord* measurement) {
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", c.timeout_s);
  const std::string call = describe_call(c.coll, c.impl, c.bytes, c.count, c.dtype, c.ranks);
  std::string measuring, measured_impl;
  Collective measured_coll = c.coll;
  if (measurement) {
    std::lock_guard lock(measurement->mu);
    measuring = measurement->what, measured_impl = measurement->impl, measured_coll = measurement->coll;
  }
  const bool is_measurement = measuring.empty() || (measured_impl == c.impl && measured_coll == c.coll);
  return "rank " + std::to_string(c.rank) + ": " +
         (is_measurement ? (measuring.empty() ? call : measuring)
                         : "while measuring " + measuring + ", the helper call " + call) +
         " did not finish within the timeout of " + timeout +
         " s: the watchdog stopped the job (a blocking library call cannot be interrupted and does not say which "
         "rank it waits for)";
}

}  // namespace parbench
