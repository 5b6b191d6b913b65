// Training under a parallelism scheme: the Scheme interface every scheme implements, and the
// registry of schemes by --scheme name. One Scheme object lives on each rank.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/table/collective_table.h"
#include "collectives/communicator/communicator.h"
#include "core/allocator.h"
#include "core/stream.h"
#include "core/stream_timeline.h"
#include "kernels/ops.h"
#include "models/config.h"
#include "parallel/plan/plan.h"
#include "parallel/schedule/schedule.h"
#include "parallel/scheme_kinds.h"
#include "parallel/train_config.h"

namespace parbench {


// Bytes a rank moved per step, by nominal collective volume: the bus bytes each rank sends for an S-byte buffer
// (wire_bytes of the collective table; sharded: all-gather or reduce-scatter).
struct CommCounter {
  std::uint64_t bytes = 0;
  std::uint64_t host_device_bytes = 0;  // offload traffic
  void allreduce(std::uint64_t s, int n) { bytes += wire_bytes(Collective::allreduce, s, n); }
  void sharded(std::uint64_t s, int n) { bytes += wire_bytes(Collective::allgather, s, n); }
};

// A pipeline stage's compute time and the step's pipeline span, for the measured bubble 1 - busy / span.
struct PipelineTiming {
  double busy_ms = 0;       // this rank's forward and backward compute
  double span_ms = 0;       // from the step's common start to this rank's last pipeline action
  int peak_in_flight = 0;   // microbatch-chunks forwarded but not yet fully backpropagated
  std::vector<double> action_ms;  // each compute action's time, in the order of this stage's action list
};

// How a scheme lays the ranks out: data x tensor x pipeline parallel degrees, the schedule and its microbatches.
struct ParallelShape {
  int dp = 1, tp = 1, pp = 1;
  ScheduleRef schedule;  // empty without a pipeline
  int microbatches = 1;  // per step and data-parallel rank (the accumulation steps of the data-parallel schemes)
  int virtual_stages = 1;
  std::vector<int> stage_blocks;  // pipelines: blocks of each virtual stage (parallel/plan/partition.h)
};

class Scheme {
 public:
  virtual ~Scheme() = default;
  // Queues one global step (all microbatches of this rank, communication, optimizer) on the rank's streams; the
  // host waits inside it only where the scheme cannot do otherwise (bench_train counts those waits).
  virtual void queue_step(int step_index) = 0;
  // The last step's global mean loss (the same on every rank). Collective; read after the step's work is done
  // it waits for nothing more (earlier it waits for the loss).
  virtual double loss() { return last_loss_; }
  // One step and its loss.
  double step(int step_index) {
    queue_step(step_index);
    return loss();
  }
  // The full parameter vector (model dtype values as floats), on every rank. Collective.
  virtual std::vector<float> full_params() = 0;
  // This rank's bytes moved in the last step.
  virtual const CommCounter& last_step_comm() const = 0;
  // Closed-form bytes per category for this rank (ZeRO paper), for --estimate-memory.
  virtual MemSplit estimated_state_bytes() const = 0;
  int data_parallel_ranks() const { return dp_; }
  int accumulation_steps() const { return accum_; }
  virtual ParallelShape shape() const { return {dp_, 1, 1, {}, accum_, 1, {}}; }
  // The last step's pipeline timing of this rank; null for schemes without a pipeline.
  virtual const PipelineTiming* last_step_pipeline() const { return nullptr; }

 protected:
  int dp_ = 1, accum_ = 1;
  double last_loss_ = 0;  // for schemes that know their loss when the step is queued
};

// A rank's resources. Computation is queued on `stream`; communication that overlaps it on `comm_stream` (the
// compute stream when none is given), ordered by events; `timeline`, when given, records when each ran.
struct RankContext {
  Communicator& comm;  // the world, on the auto policy: the schemes pass --impl per call or set it on their groups
  TrackedAllocator& alloc;
  const Stream& stream;
  const Stream* comm_stream_or_null = nullptr;
  StreamTimeline* timeline = nullptr;
  const Stream& communication_stream() const { return comm_stream_or_null ? *comm_stream_or_null : stream; }
};

// This scheme's implementation (schemes/registry.cpp lists one per kind).
using MakeScheme = std::unique_ptr<Scheme> (*)(const TrainConfig&, RankContext);
MakeScheme scheme_implementation(const SchemeKind& kind);
// Validates the options against the scheme (UsageError) and builds this rank's scheme.
std::unique_ptr<Scheme> make_scheme(const TrainConfig& cfg, RankContext ctx);

}  // namespace parbench
