// Event-timed intervals per stream and their overlap.
#include "core/stream_timeline.h"

#include <algorithm>

#include "base/error.h"

namespace parbench {

Event& StreamTimeline::next_event() {
  if (used_ == events_.size()) events_.push_back(std::make_unique<Event>(device_));
  return *events_[used_++];
}

void StreamTimeline::start(const Stream& s) {
  std::lock_guard lock(mutex_);
  used_ = 0;
  spans_.clear();
  next_event().record(s);
}

int StreamTimeline::open(Lane lane, const Stream& s) {
  std::lock_guard lock(mutex_);
  PB_CHECK(used_ > 0, "StreamTimeline::open before start");
  spans_.push_back({lane, used_, 0});
  next_event().record(s);
  return int(spans_.size()) - 1;
}

void StreamTimeline::close(int id, const Stream& s) {
  std::lock_guard lock(mutex_);
  PB_CHECK(id >= 0 && std::size_t(id) < spans_.size() && spans_[std::size_t(id)].end == 0,
           "StreamTimeline::close of an interval that is not open");
  spans_[std::size_t(id)].end = used_;
  next_event().record(s);
}

std::vector<StreamTimeline::Interval> StreamTimeline::intervals() const {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < used_; ++i)
    if (!events_[i]->done()) events_[i]->synchronize();  // read early: wait for the step's work
  std::vector<Interval> out;
  for (const Span& sp : spans_) {
    if (sp.end == 0) continue;  // never closed (the step failed inside it)
    out.push_back({sp.lane, Event::elapsed_ms(*events_[0], *events_[sp.begin]),
                   Event::elapsed_ms(*events_[0], *events_[sp.end])});
  }
  return out;
}

double overlap_fraction(const std::vector<StreamTimeline::Interval>& intervals) {
  using Lane = StreamTimeline::Lane;
  std::vector<std::pair<double, double>> busy;  // the compute lane's intervals, merged
  for (const auto& iv : intervals)
    if (iv.lane == Lane::compute && iv.end_ms > iv.begin_ms) busy.emplace_back(iv.begin_ms, iv.end_ms);
  std::sort(busy.begin(), busy.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& b : busy) {
    if (!merged.empty() && b.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, b.second);
    else
      merged.push_back(b);
  }
  double comm = 0, under_compute = 0;
  for (const auto& iv : intervals) {
    if (iv.lane != Lane::communication || iv.end_ms <= iv.begin_ms) continue;
    comm += iv.end_ms - iv.begin_ms;
    for (const auto& [b, e] : merged) under_compute += std::max(0.0, std::min(e, iv.end_ms) - std::max(b, iv.begin_ms));
  }
  return comm > 0 ? under_compute / comm : 0;
}

}  // namespace parbench
