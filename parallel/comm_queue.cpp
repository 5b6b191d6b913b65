// The two paths of overlapped communication: events between streams, or a thread that waits for an event.
#include "parallel/comm_queue.h"

#include <optional>

#include "collectives/communicator/fault_injection.h"
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

// On the communication stream: timed there, its temporaries in that stream's blocks (reused only in its order), its
// host ranges on the rank's "comm" track (the communication thread has no rank of its own), and on a GPU its traced
// ranges timed by events there and shown on its row.
void CommQueue::run(const std::function<void(const Stream& s)>& collective) {
  TraceTrack track(comm_.world_rank_of(comm_.rank()), "comm");  // a split group's member keeps its world rank
  TimelineSpan span(timeline_, Lane::communication, communication_);
  CurrentStream allocating_for(communication_.native());
  std::optional<TraceStream> traced_on;
  if (!comm_.device().on_host()) traced_on.emplace(communication_, "comm stream");
  collective(communication_);
}

std::size_t CommQueue::submit(std::function<void(const Stream& s)> collective, std::vector<Tensor> keep) {
  const std::size_t ticket = submitted_++;
  Event& ready = event(ready_, ticket);
  ready.record(compute_);
  if (!keep.empty()) kept_[ticket] = std::move(keep);
  if (!on_stream_) {
    worker_->submit([this, &ready, collective = std::move(collective)] {
      ready.synchronize();  // this thread waits for the compute stream, not the one issuing it
      run(collective);
      communication_.synchronize();  // what it queued there is done when wait() returns
    });
    return ticket;
  }
  ready.wait_on(communication_);
  {
    Communicator::StreamOrder order(comm_, communication_.native());
    run(collective);
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
  wait(submitted_ - 1);  // releases every kept tensor
  submitted_ = 0;
}

}  // namespace parbench
