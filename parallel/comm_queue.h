// Collectives that overlap the computation queued after them, as DDP's bucket allreduces do: each starts once
// the compute stream has done the work queued before submit(), and the compute stream's work queued after join()
// starts once they are all done. On a GPU with a library implementation (NCCL) they are queued on the rank's
// communication stream, ordered by events, and the host only issues them; otherwise (host devices, or the
// hand-written algorithms, which the host drives) a communication thread runs them, after waiting for the
// compute stream's event itself, so the thread issuing the computation never waits.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "core/stream.h"
#include "core/stream_timeline.h"
#include "parallel/comm_worker.h"

namespace parbench {

class CommQueue {
 public:
  // `impl`: the implementation the submitted collectives run (it decides between the two paths).
  CommQueue(Communicator& comm, const Stream& compute, const Stream& communication, StreamTimeline* timeline,
            const Algorithm& impl);
  // Runs `collective` (which calls `comm`'s collectives) after the compute stream's work queued so far.
  void submit(std::function<void()> collective);
  // The compute stream's work queued from now on waits for every submitted collective.
  void join();
  bool on_stream() const { return on_stream_; }

 private:
  Event& event(std::size_t i);  // the i-th submission's ready event, reused from step to step

  Communicator& comm_;
  const Stream& compute_;
  const Stream& communication_;
  StreamTimeline* timeline_;
  bool on_stream_;
  std::vector<std::unique_ptr<Event>> ready_;
  std::size_t submitted_ = 0;  // since the last join
  Event done_;
  std::unique_ptr<CommWorker> worker_;  // the thread path
};

}  // namespace parbench
