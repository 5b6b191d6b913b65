// Collectives that overlap the computation queued after them, as DDP's bucket allreduces and ZeRO's gathers and
// reduce-scatters do: each starts once the compute stream has done the work queued before its submit(), and the
// compute stream's work queued after wait(ticket) or join() starts once it is done. On a GPU with a library
// implementation (NCCL) they are queued on the rank's communication stream, ordered by events, and the host only
// issues them; otherwise (host devices, or the hand-written algorithms, which the host drives) a communication
// thread runs them, after waiting for the compute stream's event itself, so the thread issuing the computation
// never waits on the device.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "core/stream.h"
#include "core/stream_timeline.h"
#include "core/tensor.h"
#include "parallel/comm_worker.h"

namespace parbench {

class CommQueue {
 public:
  // `impl`: the implementation the submitted collectives run (it decides between the two paths).
  CommQueue(Communicator& comm, const Stream& compute, const Stream& communication, StreamTimeline* timeline,
            const Algorithm& impl);
  // Runs `collective(s)` (which calls the communicator's collectives and may queue copies or kernels on `s`, the
  // stream it runs on) after the compute stream's work queued so far. `keep`: tensors the collective reads or
  // writes that the caller drops before it is done; they are held until the compute stream has waited for it.
  // Returns a ticket for wait().
  std::size_t submit(std::function<void(const Stream& s)> collective, std::vector<Tensor> keep = {});
  // The compute stream's work queued from now on waits for the collective of `ticket` and those before it.
  void wait(std::size_t ticket);
  // ... for every submitted collective.
  void join();
  bool on_stream() const { return on_stream_; }

 private:
  Event& event(std::vector<std::unique_ptr<Event>>& pool, std::size_t i);  // reused from step to step
  void run(const std::function<void(const Stream& s)>& collective);
  void release_through(std::size_t ticket);

  Communicator& comm_;
  const Stream& compute_;
  const Stream& communication_;
  StreamTimeline* timeline_;
  bool on_stream_;
  std::vector<std::unique_ptr<Event>> ready_, done_;  // per ticket since the last join
  std::size_t submitted_ = 0;                         // tickets since the last join
  std::map<std::size_t, std::vector<Tensor>> kept_;
  std::unique_ptr<CommWorker> worker_;  // the thread path
};

}  // namespace parbench
