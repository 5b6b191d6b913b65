// The two paths of overlapped communication: events between streams, or a thread that waits for an event.
#include "parallel/comm_queue.h"

#include <optional>

#include "collectives/fault_injection.h"
#include "core/current_stream.h"
#include "profiles/trace.h"

namespace parbench {

using Lane = StreamTimeline::Lane;

CommQueue::CommQueue(Communicator& comm, const Stream& compute, const Stream& communication,
                     StreamTimeline* timeline, const Algorithm& impl)
    : comm_(comm),
      compute_(compute),
      communication_(communication),
      timeline_(timeline),
      on_stream_(!comm.device().on_host() && impl.queues_on_callers_stream()) {
  if (!on_stream_) worker_ = std::make_unique<CommWorker>(comm.device());
}

Event& CommQueue::event(std::vector<std::unique_ptr<Event>>& pool, std::size_t i) {
  while (pool.size() <= i) pool.push_back(std::make_unique<Event>(comm_.device()));
  return *pool[i];
}

std::size_t CommQueue::submit(std::function<void(const Stream& s)> collective, std::vector<Tensor> keep) {
  const std::size_t ticket = submitted_++;
  Event& ready = event(ready_, ticket);
  ready.record(compute_);
  if (!keep.empty()) kept_[ticket] = std::move(keep);
  if (!on_stream_) {
    worker_->submit([this, &ready, collective = std::move(collective)] {
      ready.synchronize();  // this thread waits for the compute stream, not the one issuing it
      {
        TimelineSpan span(timeline_, Lane::communication, communication_);
        CurrentStream allocating_for(communication_.native());
        // On a GPU its traced ranges are timed by events on the communication stream and shown on its row.
        std::optional<TraceStream> traced_on;
        if (!comm_.device().on_host()) traced_on.emplace(communication_, "comm stream");
        collective(communication_);
      }
      communication_.synchronize();  // what it queued there is done when wait() returns
    });
    return ticket;
  }
  ready.wait_on(communication_);
  {
    TimelineSpan span(timeline_, Lane::communication, communication_);
    Communicator::StreamOrder order(comm_, communication_.native());
    // Temporaries of the collective belong to the communication stream's blocks: reused only in its order.
    CurrentStream allocating_for(communication_.native());
    TraceStream traced_on(communication_, "comm stream");
    collective(communication_);
  }
  event(done_, ticket).record(communication_);
  return ticket;
}

void CommQueue::release_through(std::size_t ticket) {
  kept_.erase(kept_.begin(), kept_.upper_bound(ticket));
}

void CommQueue::wait(std::size_t ticket) {
  if (!on_stream_) {
    worker_->wait();
    return release_through(ticket);
  }
  if (!drop_stream_wait(comm_.rank())) done_.at(ticket)->wait_on(compute_);
  release_through(ticket);
}

void CommQueue::join() {
  if (submitted_ == 0) return;
  wait(submitted_ - 1);
  submitted_ = 0;
  kept_.clear();
}

}  // namespace parbench
