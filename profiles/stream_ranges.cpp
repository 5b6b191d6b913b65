// The queue of ranges timed by stream events, their events' free lists and the per-device clock anchors.
#include "profiles/stream_ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "profiles/trace.h"

namespace parbench {

StreamRangeQueue& StreamRangeQueue::instance() {
  static StreamRangeQueue* queue = new StreamRangeQueue;  // leaked on purpose, see the header
  return *queue;
}

StreamRangeQueue::PerDevice& StreamRangeQueue::device_locked(const Device& d) {
  for (PerDevice& pd : devices_)
    if (pd.device == d) return pd;
  devices_.push_back(PerDevice{d, nullptr, {}});
  return devices_.back();
}

std::unique_ptr<StreamRangeQueue::Anchor> StreamRangeQueue::measure_anchor(const Device& d) {
  TraceRecorder& rec = TraceRecorder::instance();
  auto best = std::make_unique<Anchor>();
  best->stream = std::make_unique<Stream>(d, true);
  std::int64_t window = std::numeric_limits<std::int64_t>::max();
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto ev = std::make_unique<Event>(d);
    const std::int64_t t0 = rec.now_ns();
    ev->record(*best->stream);
    ev->synchronize();
    const std::int64_t t1 = rec.now_ns();
    // The event ran between its record and the end of the wait; the middle is off by at most half the window.
    if (t1 - t0 < window) {
      window = t1 - t0;
      best->event = std::move(ev);
      best->host_us = static_cast<double>(t0 + t1) / 2e3;
    }
  }
  return best;
}

void StreamRangeQueue::anchor(const Device& d) {
  {
    std::lock_guard lock(mu_);
    if (device_locked(d).anchor) return;
  }
  std::unique_ptr<Anchor> a = measure_anchor(d);  // unlocked: it waits for the device
  std::lock_guard lock(mu_);
  PerDevice& pd = device_locked(d);
  if (!pd.anchor) pd.anchor = std::move(a);
}

std::unique_ptr<Event> StreamRangeQueue::take(const Device& d) {
  {
    std::lock_guard lock(mu_);
    PerDevice& pd = device_locked(d);
    if (!pd.free.empty()) {
      std::unique_ptr<Event> ev = std::move(pd.free.back());
      pd.free.pop_back();
      return ev;
    }
    ++created_;
  }
  return std::make_unique<Event>(d);  // unlocked: creating a CUDA event may take a while
}

Event* StreamRangeQueue::begin(const Stream& s) {
  anchor(s.device());
  std::unique_ptr<Event> ev = take(s.device());
  ev->record(s);
  return ev.release();
}

void StreamRangeQueue::end(const Stream& s, Event* begin, std::string&& name, Category cat, int pid, int tid,
                           const RangeArgs& args) {
  std::unique_ptr<Event> b(begin);
  std::unique_ptr<Event> e = take(s.device());
  e->record(s);
  std::lock_guard lock(mu_);
  pending_.push_back(Pending{s.device(), std::move(b), std::move(e), std::move(name), cat, pid, tid, args});
  if (pending_.size() < resolve_at_) return;
  resolve_locked(false);
  if (pending_.size() >= kMaxPending) {
    resolve_one_locked(pending_.front(), true);  // the bound: wait for the oldest range
    resolve_locked(false);
  }
  resolve_at_ = std::min(kMaxPending, std::max(kFirstResolve, 2 * pending_.size()));
}

// Adds `p` to the recorder and returns its events to the free list (they are left in `p`, empty afterwards).
bool StreamRangeQueue::resolve_one_locked(Pending& p, bool wait) {
  PerDevice& pd = device_locked(p.device);
  try {
    if (wait)
      p.end->synchronize();
    else if (!p.end->done())
      return false;
    // Both ends from the anchor: times of one stream's events stay in order, so nested ranges stay nested.
    if (pd.anchor) {
      // Whole nanoseconds, as host-timed ranges have, so that the JSON's rounding cannot reorder neighbours.
      auto at_ns = [&](const Event& e) {
        return std::llround(1e3 * pd.anchor->host_us + 1e6 * Event::elapsed_ms(*pd.anchor->event, e));
      };
      const long long start = at_ns(*p.begin), stop = std::max(start, at_ns(*p.end));
      TraceRecorder::instance().add(TraceRecorder::Event{std::move(p.name), p.cat, p.pid, p.tid, double(start) / 1e3,
                                                         double(stop - start) / 1e3, p.args});
    }
  } catch (...) {
    // A device error while profiling: this range is lost; the next CUDA call of the measured code reports it.
  }
  pd.free.push_back(std::move(p.begin));
  pd.free.push_back(std::move(p.end));
  return true;
}

void StreamRangeQueue::resolve_locked(bool wait) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (!pending_[i].end || resolve_one_locked(pending_[i], wait)) continue;  // no end: resolved already
    if (kept != i) pending_[kept] = std::move(pending_[i]);
    ++kept;
  }
  pending_.resize(kept);
}

void StreamRangeQueue::resolve(bool wait) {
  std::lock_guard lock(mu_);
  resolve_locked(wait);
  resolve_at_ = std::min(kMaxPending, std::max(kFirstResolve, 2 * pending_.size()));
}

void StreamRangeQueue::clear() {
  std::lock_guard lock(mu_);
  for (Pending& p : pending_) {
    PerDevice& pd = device_locked(p.device);
    pd.free.push_back(std::move(p.begin));
    pd.free.push_back(std::move(p.end));
  }
  pending_.clear();
  resolve_at_ = kFirstResolve;
}

std::size_t StreamRangeQueue::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

std::size_t StreamRangeQueue::events_created() const {
  std::lock_guard lock(mu_);
  return created_;
}

}  // namespace parbench
