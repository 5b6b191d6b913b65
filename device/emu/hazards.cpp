// The stream-ordering hazard checker's memory side: per allocation, the byte ranges the queued operations touch
// with the timeline and tick of each, and the check of a new operation's accesses against them (see hazards.h).
#include "device/emu/hazards.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/host_order.h"
#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"
#include "device/emu/settings.h"

namespace parbench::gpu_emu {

void join(VClock& into, const VClock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

namespace {

// One operation's access of [lo, hi) of an allocation, at tick `tick` of timeline `timeline`.
struct Record {
  std::uintptr_t lo, hi;
  int timeline;
  std::uint32_t tick;
  bool write;
  std::shared_ptr<const OpWho> who;
  std::string role;
};

// Pinned host bytes [lo, hi) that a queued operation writes (or reads), guarded from the host until a host wait
// orders the host after it.
struct Guard {
  std::uintptr_t lo, hi;
  int timeline;
  std::uint32_t tick;
  bool write;
  std::uint64_t serial;
  std::uintptr_t base;  // the allocation's
  std::shared_ptr<const OpWho> who;
  std::string role, allocation;
};

struct State {
  std::mutex m;  // taken inside the scheduler's mutex, or alone
  std::unordered_map<std::uint64_t, std::vector<Record>> by_allocation;  // by allocation serial
  int timelines = 0;      // guarded by the scheduler's mutex
  VClock hosts;           // every host thread's clock joined; the scheduler's mutex
  // set_hazard_mode's mode (a HazardMode), -1 until it is called: atomic, so that each enqueue can ask whether
  // hazards are checked without taking m.
  std::atomic<int> mode{-1};
  std::vector<std::string> reports;
  std::vector<Guard> guards;  // pinned host memory queued device work touches, until a host wait covers it
};
State& state() {
  static State* s = new State;  // never destroyed: workers may still queue while the program exits
  return *s;
}

HazardMode current_mode(const State& st) {
  const int m = st.mode.load();
  return m < 0 ? settings().hazards : HazardMode(m);
}

struct HostThread {
  int timeline = -1;
  VClock clock;
};
thread_local HostThread t_host;

// Whether the operation behind a record or a guard happens before whatever has clock `c`.
template <class At>
bool ordered(const At& x, const VClock& c) {
  return std::size_t(x.timeline) < c.size() && c[std::size_t(x.timeline)] >= x.tick;
}

// ---- guards of pinned host memory (a memory protection key the device's threads hold and host threads do not)
int g_guard_key = -1;
constexpr std::uintptr_t kPage = 4096;

// Sets the key of the pages of [lo, hi): guarded, or back to the default.
void protect_pages(std::uintptr_t lo, std::uintptr_t hi, bool guard) {
  const std::uintptr_t first = lo & ~(kPage - 1), end = (hi + kPage - 1) & ~(kPage - 1);
  ::pkey_mprotect(reinterpret_cast<void*>(first), end - first, PROT_READ | PROT_WRITE, guard ? g_guard_key : 0);
}

void guard_locked(State& st, Guard g) {  // st.m held
  if (g_guard_key < 0) return;
  protect_pages(g.lo, g.hi, true);
  st.guards.push_back(std::move(g));
}

// Drops the guards `gone` says and unguards their pages unless another guard keeps them. st.m held.
template <class Gone>
void release_guards_locked(State& st, Gone gone) {
  std::vector<Guard> dropped;
  std::erase_if(st.guards, [&](const Guard& g) {
    if (!gone(g)) return false;
    dropped.push_back(g);
    return true;
  });
  for (const Guard& d : dropped) {
    protect_pages(d.lo, d.hi, false);
    for (const Guard& kept : st.guards)
      if (kept.hi > (d.lo & ~(kPage - 1)) && kept.lo < ((d.hi + kPage - 1) & ~(kPage - 1)))
        protect_pages(kept.lo, kept.hi, true);
  }
}

std::string stream_name(const OpWho& w) {
  return "GPU " + std::to_string(w.device) + (w.legacy ? " legacy stream" : " stream " + std::to_string(w.stream));
}

std::string report(const Allocation& a, const Record& earlier, const OpWho& later, const MemAccess& x,
                   std::uintptr_t lo, std::uintptr_t hi) {
  const std::string verb = x.write ? "writes" : "reads";
  const std::string before = earlier.write ? "writes" : "reads";
  return "stream-ordering hazard: " + later.what + " on " + stream_name(later) + " " + verb + " bytes " +
         std::to_string(lo - a.base) + ".." + std::to_string(hi - a.base) + " of " + describe(a) + " (" + x.role +
         "), which " + earlier.who->what + " on " + stream_name(*earlier.who) + " " + before + " (" + earlier.role +
         "), and nothing orders the two: record an event after the first on its stream and wait for it on the "
         "second's (cudaEventRecord + cudaStreamWaitEvent), or synchronize the host between them";
}

void raise(State& st, const std::string& text) {  // st.m held
  const HazardMode mode = current_mode(st);
  std::fprintf(stderr, "parbench-emu: %s\n", text.c_str());
  if (mode == HazardMode::abort) {
    std::fprintf(stderr, "parbench-emu: stopping at the first hazard (PARBENCH_EMU_HAZARDS=report goes on)\n");
    std::abort();
  }
  st.reports.push_back(text);
}

}  // namespace

int new_timeline() { return state().timelines++; }

// ---- order between host threads (base/host_order.h): a tag's clock is everything its publishers had seen
namespace {

std::unordered_map<const void*, VClock>& tags() {  // the scheduler's mutex
  static auto* m = new std::unordered_map<const void*, VClock>;
  return *m;
}
void publish_tag(const void* tag) {
  std::lock_guard<std::mutex> l(scheduler_mutex());
  join(tags()[tag], host_clock());
}
void receive_tag(const void* tag) {
  std::lock_guard<std::mutex> l(scheduler_mutex());
  if (auto it = tags().find(tag); it != tags().end()) host_observes(it->second);
}
const bool g_installed = (host_order::install(publish_tag, receive_tag), true);

}  // namespace

VClock& host_clock() {
  State& st = state();
  if (t_host.timeline < 0) {
    t_host.timeline = new_timeline();
    t_host.clock = st.hosts;
    if (t_host.clock.size() <= std::size_t(t_host.timeline)) t_host.clock.resize(std::size_t(t_host.timeline) + 1, 0);
  }
  return t_host.clock;
}

void host_observes(const VClock& c) {
  State& st = state();
  join(host_clock(), c);
  join(st.hosts, c);
  std::lock_guard<std::mutex> l(st.m);
  if (!st.guards.empty()) release_guards_locked(st, [&](const Guard& g) { return ordered(g, t_host.clock); });
}

bool hazards_checked() { return current_mode(state()) != HazardMode::off; }

void check_accesses(const std::shared_ptr<const OpWho>& who, int timeline, const VClock& clock,
                    const std::vector<MemAccess>& accesses) {
  State& st = state();
  if (accesses.empty()) return;
  std::lock_guard<std::mutex> l(st.m);
  if (current_mode(st) == HazardMode::off) return;
  const std::uint32_t tick = clock.at(std::size_t(timeline));
  bool reported = false;  // one report per operation: an in-place operand would give two
  for (const MemAccess& x : accesses) {
    if (!x.p || x.bytes == 0) continue;
    const auto a = find_allocation(x.p);
    if (!a || a->freed) continue;  // pageable host memory is staged; freed memory the operand checks refuse
    const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(x.p);
    const std::uintptr_t hi = std::min(lo + x.bytes, a->base + a->size);
    std::vector<Record>& recs = st.by_allocation[a->serial];
    for (const Record& r : recs) {
      if (reported || r.hi <= lo || hi <= r.lo || !(x.write || r.write) || ordered(r, clock)) continue;
      raise(st, report(*a, r, *who, x, std::max(lo, r.lo), std::min(hi, r.hi)));
      reported = true;
    }
    // What this access supersedes: earlier accesses of bytes inside it that happen before it, writes only by a
    // write (a later read must still be checked against the last write).
    std::erase_if(recs, [&](const Record& r) {
      return r.lo >= lo && r.hi <= hi && ordered(r, clock) && (x.write || !r.write);
    });
    recs.push_back({lo, hi, timeline, tick, x.write, who, x.role});
    if (a->kind == MemKind::pinned_host) guard_locked(st, {lo, hi, timeline, tick, x.write, a->serial, a->base, who, x.role, describe(*a)});
  }
}

void forget_accesses(std::uint64_t allocation_serial) {
  State& st = state();
  std::lock_guard<std::mutex> l(st.m);
  st.by_allocation.erase(allocation_serial);
  release_guards_locked(st, [&](const Guard& g) { return g.serial == allocation_serial; });
}

void check_unmap(const Allocation& a, const std::string& what) {
  std::lock_guard<std::mutex> scheduling(scheduler_mutex());
  const VClock& mine = host_clock();
  State& st = state();
  std::lock_guard<std::mutex> l(st.m);
  if (current_mode(st) == HazardMode::off) return;
  const auto it = st.by_allocation.find(a.serial);
  if (it == st.by_allocation.end()) return;
  for (const Record& r : it->second) {
    if (ordered(r, mine)) continue;
    return raise(st, "stream-ordering hazard: " + what + " unmaps " + describe(a) + ", which " + r.who->what +
                         " on " + stream_name(*r.who) + " " + (r.write ? "writes" : "reads") + " (" + r.role +
                         "), and no host wait orders this thread after it: synchronize its stream or the device "
                         "(cudaStreamSynchronize, cudaDeviceSynchronize) first");
  }
}

void set_hazard_mode(HazardMode mode) { state().mode.store(int(mode)); }

std::vector<std::string> take_hazard_reports() {
  State& st = state();
  std::lock_guard<std::mutex> l(st.m);
  return std::exchange(st.reports, {});
}

// ---- the host side of pinned memory
void init_pinned_guards() {
  if (settings().hazards == HazardMode::off || g_guard_key >= 0) return;
  g_guard_key = ::pkey_alloc(0, PKEY_DISABLE_ACCESS);  // -1 without memory protection keys: no guards
  // At exit every page is unguarded, for what reads memory then (LeakSanitizer's scan of the heap).
  if (g_guard_key >= 0) std::atexit([] {
      State& st = state();
      std::lock_guard<std::mutex> l(st.m);
      release_guards_locked(st, [](const Guard&) { return true; });
    });
}

int pinned_guard_key() { return g_guard_key; }

bool pinned_guard_fault(void* address, bool write) {
  State& st = state();
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::string text;
  {
    std::lock_guard<std::mutex> l(st.m);
    const VClock& mine = t_host.clock;
    for (const Guard& g : st.guards) {
      if (at < g.lo || at >= g.hi || ordered(g, mine) || !(write || g.write)) continue;
      text = "stream-ordering hazard: a host thread " + std::string(write ? "writes" : "reads") + " byte " +
             std::to_string(at - g.base) + " of " + g.allocation + ", which " + g.who->what + " on " +
             stream_name(*g.who) + " " + (g.write ? "writes" : "reads") + " (" + g.role + ")" +
             ", and no host wait orders this thread after it: synchronize its stream or an event recorded after it "
             "(cudaStreamSynchronize, cudaEventSynchronize) first";
      break;
    }
    // Whatever the verdict, the page lets the access through from now on (its other guards are dropped: a page
    // holds bytes of several operations, and the access must go on).
    const std::uintptr_t page = at & ~(kPage - 1);
    release_guards_locked(st, [&](const Guard& g) { return g.hi > page && g.lo < page + kPage; });
    protect_pages(page, page + 1, false);
    if (!text.empty()) raise(st, text);
  }
  return true;
}

// ---- the operands an op declares for its launches
namespace {
thread_local std::vector<std::pair<const void*, std::size_t>> t_operands;
}

std::size_t operand_mark() { return t_operands.size(); }
void declare_operand(const void* p, std::size_t bytes) { t_operands.emplace_back(p, bytes); }
void release_operands(std::size_t mark) {
  if (mark < t_operands.size()) t_operands.resize(mark);
}

std::size_t declared_extent(const void* p) {
  std::size_t bytes = 0;
  for (const auto& [q, n] : t_operands)
    if (q == p) bytes = std::max(bytes, n);
  return bytes;
}

}  // namespace parbench::gpu_emu
