// Ranges timed by events on a stream (TraceStream): events come from a free list per device, a range waits in a
// queue until its end event is done, and its times are put on the trace's clock through a per-device anchor.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/stream.h"
#include "profiles/category.h"

namespace parbench {

class StreamRangeQueue {
 public:
  // Resolving starts when this many ranges are queued and the queue's size doubles before the next try, so a range
  // costs O(1) amortised; at kMaxPending the oldest range is waited for, so the queue and its events stay bounded
  // even if the host runs far ahead of the GPU (which launch queues do not allow in practice).
  static constexpr std::size_t kFirstResolve = 256;
  static constexpr std::size_t kMaxPending = 8192;

  static StreamRangeQueue& instance();  // never destroyed: ranges may end during static destruction

  // An event recorded on `s` now (the range's beginning); the caller hands it back to end().
  Event* begin(const Stream& s);
  // Records the range's end on `s` and queues it for the track (pid = rank, tid = track id).
  void end(const Stream& s, Event* begin, std::string&& name, Category cat, int pid, int tid, const RangeArgs& args);
  // Adds every queued range whose events are done to the recorder; with `wait`, every queued range.
  void resolve(bool wait);
  // Drops the queued ranges (their events go back to the free lists).
  void clear();
  // Ties `d`'s event clock to the recorder's clock, once per device: a few events on an idle stream of its own,
  // each waited for, keeping the one whose record-to-done window was shortest.
  void anchor(const Device& d);
  std::size_t pending() const;
  std::size_t events_created() const;  // events made so far: a steady state makes none

 private:
  struct Anchor {
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> event;
    double host_us = 0;  // the event's time on the recorder's clock
  };
  struct PerDevice {
    Device device;
    std::unique_ptr<Anchor> anchor;
    std::vector<std::unique_ptr<Event>> free;
  };
  struct Pending {
    Device device;
    std::unique_ptr<Event> begin, end;
    std::string name;
    Category cat;
    int pid, tid;
    RangeArgs args;
  };
  StreamRangeQueue() = default;
  PerDevice& device_locked(const Device& d);
  std::unique_ptr<Event> take(const Device& d);  // from the free list, or a new one
  bool resolve_one_locked(Pending& p, bool wait);  // false: not done yet
  void resolve_locked(bool wait);
  static std::unique_ptr<Anchor> measure_anchor(const Device& d);

  mutable std::mutex mu_;
  std::vector<PerDevice> devices_;
  std::vector<Pending> pending_;
  std::size_t resolve_at_ = kFirstResolve;
  std::size_t created_ = 0;
};

}  // namespace parbench
