// When a step's work ran on each stream, from events recorded on the streams themselves (host timestamps on the
// host devices), so the overlap of communication with computation is measured where it happens: on the device.
// The host only records; the times are read once the step's work is done.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "core/stream.h"

namespace parbench {

class StreamTimeline {
 public:
  enum class Lane { compute, communication };
  struct Interval {
    Lane lane;
    double begin_ms, end_ms;  // from the step's start
  };

  explicit StreamTimeline(Device device) : device_(device) {}
  // A new step: forgets the last one's intervals and records its start on `s`.
  void start(const Stream& s);
  // An interval of `lane`'s work: open() records its beginning on `s` and returns its id, close() its end. Either
  // may be called from any thread (a communication thread records its own intervals).
  int open(Lane lane, const Stream& s);
  void close(int id, const Stream& s);
  // The step's intervals, in the order they were opened; read before the step's work is done, it waits for it.
  std::vector<Interval> intervals() const;

 private:
  Event& next_event();  // mutex_ held; events are reused from step to step, so a steady step creates none

  struct Span {
    Lane lane;
    std::size_t begin, end;  // indices into events_; end 0 while open
  };
  Device device_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Event>> events_;
  std::size_t used_ = 0;  // events recorded this step; events_[0] is the start
  std::vector<Span> spans_;
};

// The fraction of the communication lane's time during which the compute lane was busy too: 1 when every
// collective ran under computation, 0 when none did or there was no communication.
double overlap_fraction(const std::vector<StreamTimeline::Interval>& intervals);

// Records one interval over a scope; does nothing without a timeline.
class TimelineSpan {
 public:
  TimelineSpan(StreamTimeline* t, StreamTimeline::Lane lane, const Stream& s)
      : timeline_(t), stream_(s), id_(t ? t->open(lane, s) : -1) {}
  ~TimelineSpan() {
    if (timeline_) timeline_->close(id_, stream_);
  }
  TimelineSpan(const TimelineSpan&) = delete;
  TimelineSpan& operator=(const TimelineSpan&) = delete;

 private:
  StreamTimeline* timeline_;
  const Stream& stream_;
  int id_;
};

}  // namespace parbench
