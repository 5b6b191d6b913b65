// Streams of the emulated GPU: each stream's operations run in order on the stream's own worker thread, after
// what CUDA orders before them; PARBENCH_EMU_DELAY=random:SEED[:MAX_US] delays operations at random so that a
// missing synchronisation shows as wrong data instead of passing by luck.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"
#include "device/emu/settings.h"

namespace parbench::simt::detail {
// device/simt/launch_spec.h, whose header chain clashes with the CUDA toolkit's names here.
void set_interleave_fuzz(bool on, unsigned long long seed, unsigned max_us);
}  // namespace parbench::simt::detail

namespace parbench::gpu_emu {

namespace {

constexpr std::uint32_t kStreamMagic = 0x5354524d;  // "STRM"

struct Delay {
  bool on = false;
  std::uint64_t seed = 0;
  unsigned max_us = 500;
};

Delay delay_from_env() {
  Delay d;
  const char* v = std::getenv("PARBENCH_EMU_DELAY");
  if (!v || !*v || std::string(v) == "off") return d;
  const std::string s(v);
  const char* accepted = "off or random:SEED or random:SEED:MAX_US (SEED and MAX_US non-negative integers)";
  if (s.rfind("random:", 0) != 0) bad_setting("PARBENCH_EMU_DELAY", v, accepted);
  try {
    std::size_t used = 0;
    const std::string rest = s.substr(7);
    d.seed = std::stoull(rest, &used);
    if (used < rest.size()) {
      if (rest[used] != ':') bad_setting("PARBENCH_EMU_DELAY", v, accepted);
      const std::string tail = rest.substr(used + 1);
      std::size_t used2 = 0;
      d.max_us = unsigned(std::stoul(tail, &used2));
      if (used2 != tail.size() || d.max_us > 1000000) bad_setting("PARBENCH_EMU_DELAY", v, accepted);
    }
  } catch (const std::logic_error&) {
    bad_setting("PARBENCH_EMU_DELAY", v, accepted);
  }
  d.on = true;
  // Blocks of co-resident kernels start after random pauses too, so kernels on different GPUs that touch each
  // other's memory meet in a different order under each seed.
  simt::detail::set_interleave_fuzz(true, d.seed, d.max_us);
  return d;
}

}  // namespace

double wait_timeout_s() {
  static const double t = [] {
    const char* v = std::getenv("PARBENCH_EMU_WAIT_TIMEOUT");
    if (!v || !*v) return 600.0;
    char* end = nullptr;
    double x = std::strtod(v, &end);
    if (end == v || *end || !(x > 0)) bad_setting("PARBENCH_EMU_WAIT_TIMEOUT", v, "seconds > 0");
    return x;
  }();
  return t;
}

struct Scheduler {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::vector<StreamState*>> streams;  // per device; [0] is the legacy stream
  std::vector<std::unique_ptr<StreamState>> all;   // never freed, so a destroyed handle stays recognisable
  // Per device, destroyed streams' last ops not yet done (a device synchronisation waits for them too), and their
  // clocks joined (what such a wait lets the host see).
  std::vector<std::vector<OpPtr>> retired;
  std::vector<VClock> retired_clock;
  Delay delay = delay_from_env();
  double timeout_s = wait_timeout_s();
  bool log = stream_log_on();
  std::uint64_t next_id = 0;
};

Scheduler& scheduler() {
  static Scheduler* s = [] {
    start_pinned_guards();    // before any stream's thread: they inherit the key's rights and take them
    auto* x = new Scheduler;  // never destroyed: workers may still run while the program exits
    x->streams.resize(std::size_t(device_count()));
    x->retired.resize(std::size_t(device_count()));
    x->retired_clock.resize(std::size_t(device_count()));
    return x;
  }();
  return *s;
}

std::mutex& scheduler_mutex() { return scheduler().m; }

namespace {

bool deps_done(const Op& op) {
  for (const OpPtr& d : op.deps)
    if (!d->done) return false;
  return true;
}

void worker(StreamState* s) {
  Scheduler& g = scheduler();
  allow_device_access_on_this_thread();
  std::mt19937_64 rng(g.delay.seed * 0x9e3779b97f4a7c15ull + s->id);
  std::unique_lock<std::mutex> l(g.m);
  for (;;) {
    g.cv.wait(l, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) return;  // destroyed and drained
    OpPtr op = s->queue.front();
    g.cv.wait(l, [&] { return deps_done(*op); });
    l.unlock();
    if (g.delay.on && rng() % 4 == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % (g.delay.max_us + 1)));
    op->started = std::chrono::steady_clock::now();
    allow_device_access_on_this_thread();  // keys allocated since the thread started
    // After a fault the context is dead, as on a GPU: later work of the device does not run.
    if (op->work && sticky(s->device) == cudaSuccess) {
      try {
        op->work();
      } catch (const std::exception& e) {
        set_sticky(s->device, cudaErrorLaunchFailure, op->what + " failed: " + e.what());
      }
    }
    l.lock();
    op->done = true;
    op->finished = std::chrono::steady_clock::now();
    if (!op->work) {
      op->finished = std::max(op->enqueued, s->last_finished);
      for (const OpPtr& d : op->deps) op->finished = std::max(op->finished, d->finished);
    }
    s->last_finished = op->finished;
    if (g.log) log_op(*s, *op);
    op->work = nullptr;  // frees the captured arguments now, not when the last handle to the op goes
    op->deps.clear();
    s->queue.pop_front();
    g.cv.notify_all();
  }
}

StreamState* legacy_stream(Scheduler& g, int device) {  // g.m held
  auto& list = g.streams[std::size_t(device)];
  if (list.empty()) {
    auto st = std::make_unique<StreamState>();
    st->magic = kStreamMagic, st->device = device, st->legacy = true, st->id = g.next_id++;
    st->timeline = new_timeline();
    list.push_back(st.get());
    std::thread(worker, st.get()).detach();
    g.all.push_back(std::move(st));
  }
  return list.front();
}

std::string pending_work() {  // g.m held
  Scheduler& g = scheduler();
  std::string out;
  for (std::size_t d = 0; d < g.streams.size(); ++d)
    for (StreamState* s : g.streams[d]) {
      if (s->queue.empty()) continue;
      out += "  GPU " + std::to_string(d) + (s->legacy ? " legacy stream" : " stream " + std::to_string(s->id)) +
             ": " + std::to_string(s->queue.size()) + " operation(s) pending, first: " + s->queue.front()->what + "\n";
    }
  return out.empty() ? "  (no pending operations)\n" : out;
}

}  // namespace

StreamState* create_stream(int device, bool non_blocking) {
  Scheduler& g = scheduler();
  std::lock_guard<std::mutex> l(g.m);
  legacy_stream(g, device);
  auto st = std::make_unique<StreamState>();
  st->magic = kStreamMagic, st->device = device, st->non_blocking = non_blocking, st->id = g.next_id++;
  st->timeline = new_timeline();
  g.streams[std::size_t(device)].push_back(st.get());
  std::thread(worker, st.get()).detach();
  g.all.push_back(std::move(st));
  return g.all.back().get();
}

void destroy_stream(StreamState* s) {
  Scheduler& g = scheduler();
  std::lock_guard<std::mutex> l(g.m);
  auto& list = g.streams[std::size_t(s->device)];
  list.erase(std::remove(list.begin(), list.end(), s), list.end());
  if (s->last && !s->last->done) g.retired[std::size_t(s->device)].push_back(s->last);
  join(g.retired_clock[std::size_t(s->device)], s->clock);
  s->destroyed = true;  // the worker finishes the queued work first, as cudaStreamDestroy promises
  s->magic = 0;
  g.cv.notify_all();
}

bool is_legacy_stream(const StreamState* s) { return s->legacy; }

void legacy_stream_used(int device, const std::string& api, const std::string& site) {
  count(Count::legacy_stream);
  if (!settings().legacy_stream_error) return;
  std::fprintf(stderr,
               "parbench-emu: %s used the legacy default stream of GPU %d (PARBENCH_EMU_LEGACY_STREAM=error), "
               "called from %s\n",
               api.c_str(), device, site.c_str());
  std::abort();
}

StreamState* work_stream(cudaStream_t handle, const char* api, const std::string& site) {
  StreamState* s = resolve_stream(handle);
  if (s && s->legacy) legacy_stream_used(s->device, api, site);
  return s;
}

std::function<void()> kernel_work(std::function<void()> work) {
  const unsigned us = settings().kernel_delay_us;
  if (us == 0) return work;
  return [us, work = std::move(work)] {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    work();
  };
}

StreamState* resolve_stream(cudaStream_t handle) {
  Scheduler& g = scheduler();
  if (handle == nullptr || handle == cudaStreamLegacy) {
    std::lock_guard<std::mutex> l(g.m);
    return legacy_stream(g, current_device());
  }
  auto* s = reinterpret_cast<StreamState*>(handle);
  std::lock_guard<std::mutex> l(g.m);
  for (const auto& st : g.all)
    if (st.get() == s) return s->magic == kStreamMagic ? s : nullptr;
  return nullptr;
}

int stream_device(const StreamState* s) { return s->device; }

namespace {

// Whether work queued on `s` waits for the work queued before on `other` without being asked to: the legacy
// default stream and the device's blocking streams wait for each other; non-blocking streams for nothing.
bool implicitly_ordered(const StreamState* s, const StreamState* other) {
  return other != s && !s->non_blocking && !other->non_blocking && (s->legacy || other->legacy);
}

// The clock of an op queued on `s` after `deps` (g.m held): the stream's, the queuing host thread's and the deps',
// with the legacy stream's implicit order taken from every blocking stream whether its work is done or not (the
// check must not depend on timing), and one tick more on the stream's timeline.
VClock next_clock(Scheduler& g, StreamState* s, const std::vector<OpPtr>& deps) {
  VClock c = s->clock;
  join(c, host_clock());
  for (const OpPtr& d : deps) join(c, d->clock);
  for (StreamState* other : g.streams[std::size_t(s->device)])
    if (implicitly_ordered(s, other)) join(c, other->clock);
  if (c.size() <= std::size_t(s->timeline)) c.resize(std::size_t(s->timeline) + 1, 0);
  ++c[std::size_t(s->timeline)];
  return c;
}

}  // namespace

OpPtr enqueue(StreamState* s, std::string what, std::function<void()> work, std::vector<OpPtr> extra,
              std::vector<MemAccess> accesses, std::string site) {
  Scheduler& g = scheduler();
  if (s->legacy) legacy_work_during_capture(s->device, what);
  // Captured: recorded for the graph's launches, and done as far as the caller's waits go (CUDA forbids those).
  if (record_if_capturing(s, what, [what, work, accesses, site](StreamState* t) {
        enqueue(t, what, work, {}, accesses, site);
      })) {
    auto captured = std::make_shared<Op>();
    captured->what = std::move(what), captured->done = true;
    return captured;
  }
  auto op = std::make_shared<Op>();
  op->what = std::move(what);
  op->work = std::move(work);
  op->enqueued = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> l(g.m);
  op->deps = std::move(extra);
  op->clock = next_clock(g, s, op->deps);
  s->clock = op->clock;
  if (!accesses.empty() && hazards_checked()) {
    auto who = std::make_shared<OpWho>(OpWho{op->what + (site.empty() ? "" : " (called from " + site + ")"), s->device,
                                             s->id, s->legacy});
    check_accesses(who, s->timeline, op->clock, accesses);
  }
  for (StreamState* other : g.streams[std::size_t(s->device)])
    if (implicitly_ordered(s, other) && other->last && !other->last->done) op->deps.push_back(other->last);
  s->queue.push_back(op);
  s->last = op;
  g.cv.notify_all();
  return op;
}

bool op_done(const OpPtr& op) {
  if (!op) return true;
  std::lock_guard<std::mutex> l(scheduler().m);
  if (op->done) host_observes(op->clock);  // a successful query orders the host after the op, as a wait does
  return op->done;
}

void wait_ops(const std::vector<OpPtr>& ops, const char* why) {
  count(Count::host_wait);
  Scheduler& g = scheduler();
  std::unique_lock<std::mutex> l(g.m);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(g.timeout_s);
  for (const OpPtr& op : ops) {
    if (!op) continue;
    if (!g.cv.wait_until(l, deadline, [&] { return op->done; })) {
      std::fprintf(stderr,
                   "parbench-emu: %s waited more than %g s (PARBENCH_EMU_WAIT_TIMEOUT) for '%s'; the emulated "
                   "GPUs' pending work:\n%s",
                   why, g.timeout_s, op->what.c_str(), pending_work().c_str());
      std::abort();
    }
    host_observes(op->clock);
  }
}

void wait_op(const OpPtr& op, const char* why) { wait_ops({op}, why); }

std::vector<OpPtr> device_tail(int device) {
  Scheduler& g = scheduler();
  std::lock_guard<std::mutex> l(g.m);
  std::vector<OpPtr> out;
  for (StreamState* s : g.streams[std::size_t(device)])  // done ones too: the host's clock learns of them
    if (s->last) out.push_back(s->last);
  auto& retired = g.retired[std::size_t(device)];
  std::erase_if(retired, [](const OpPtr& op) { return op->done; });
  out.insert(out.end(), retired.begin(), retired.end());
  return out;
}

void host_observes_device(int device) {
  Scheduler& g = scheduler();
  std::lock_guard<std::mutex> l(g.m);
  host_observes(g.retired_clock[std::size_t(device)]);
}

OpPtr stream_tail(StreamState* s) {
  std::lock_guard<std::mutex> l(scheduler().m);
  return s->last;
}

std::chrono::steady_clock::time_point finish_time(const OpPtr& op) {
  std::lock_guard<std::mutex> l(scheduler().m);
  return op->finished;
}

}  // namespace parbench::gpu_emu
