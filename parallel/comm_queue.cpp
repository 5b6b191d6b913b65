// The two paths of overlapped communication: events between streams, or a thread that waits for an event.
#include "parallel/comm_queue.h"

#include "collectives/fault_injection.h"

namespace parbench {

using Lane = StreamTimeline::Lane;

CommQueue::CommQueue(Communicator& comm, const Stream& compute, const Stream& communication,
                     StreamTimeline* timeline, const Algorithm& impl)
    : comm_(comm),
      compute_(compute),
      communication_(communication),
      timeline_(timeline),
      on_stream_(!comm.device().on_host() && impl.queues_on_callers_stream()),
      done_(comm.device()) {
  if (!on_stream_) worker_ = std::make_unique<CommWorker>(comm.device());
}

Event& CommQueue::event(std::size_t i) {
  while (ready_.size() <= i) ready_.push_back(std::make_unique<Event>(comm_.device()));
  return *ready_[i];
}

void CommQueue::submit(std::function<void()> collective) {
  Event& ready = event(submitted_++);
  ready.record(compute_);
  if (on_stream_) {
    ready.wait_on(communication_);
    TimelineSpan span(timeline_, Lane::communication, communication_);
    Communicator::StreamOrder order(comm_, communication_.native());
    collective();
    return;
  }
  worker_->submit([this, &ready, collective = std::move(collective)] {
    ready.synchronize();  // this thread waits for the compute stream, not the one issuing it
    TimelineSpan span(timeline_, Lane::communication, communication_);
    collective();
  });
}

void CommQueue::join() {
  submitted_ = 0;
  if (!on_stream_) return worker_->wait();
  done_.record(communication_);
  if (!drop_stream_wait(comm_.rank())) done_.wait_on(compute_);
}

}  // namespace parbench
