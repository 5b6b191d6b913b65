// The one pipeline executor: runs a stage's action list of any schedule (parallel/schedule) for one step.
// Compute actions run model pieces; sends are posted and complete in the background (so a send to a neighbour
// that is sending to us at the same time cannot deadlock), receives block, and each message is tagged by its
// microbatch and virtual stage (so the order of messages between two stages never matters).
#pragma once
#include <functional>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "core/stream.h"
#include "core/stream_timeline.h"
#include "models/model.h"
#include "parallel/loss_tally.h"
#include "parallel/schedule/schedule.h"
#include "parallel/train.h"

namespace parbench {

// Sends and receives queued on a communication stream as NCCL groups, ordered with the compute stream by two
// events (the schedule must pass stream_order_problem: parallel/pipeline_stream_order.h).
struct PipelineStreamPath {
  explicit PipelineStreamPath(const Stream& s) : comm(s), ready(s.device()), done(s.device()) {}
  const Stream& comm;
  Event ready, done;  // re-recorded for each exchange
};

struct PipelineStage {
  Model& model;
  UnitAccess& access;
  Communicator& pipeline;  // rank = stage
  const Stream& stream;
  TrackedAllocator& alloc;
  const PipeSchedule& schedule;
  std::vector<UnitRange> chunk_units;         // [local chunk] -> its units
  std::function<Batch(int microbatch)> batch;  // this rank's samples of a microbatch
  float dloss = 1;                             // weight of one microbatch's mean loss in the step objective
  int trace_rank = 0;                          // the world rank, for the trace's process track
  // Required: each compute action is an interval here, timed by events on `stream` (read after the step);
  // the last virtual stage's microbatch losses are added here.
  StreamTimeline* action_times = nullptr;
  LossTally* losses = nullptr;
  PipelineStreamPath* stream_path = nullptr;  // null: through the host transports, matched by tag
};

struct PipelineStepResult {
  int peak_in_flight = 0;        // microbatch-chunks forwarded but not yet fully backpropagated
  std::uint64_t sent_bytes = 0;  // activations and gradients this rank sent
};

// A step's timing from its action intervals (once the step's work is done): busy time, each action's time, and
// the span from the step's start to the end of its last action.
PipelineTiming pipeline_timing(const StreamTimeline& action_times, int peak_in_flight);

// Runs this rank's actions; compute actions are queued on the stream and timed there, without waiting for them;
// with a stream path, so are sends and receives.
// Timing starts now: call it right after a barrier of the pipeline group (on the stream path, the world's barrier
// before the step will do).
PipelineStepResult run_pipeline_stage(const PipelineStage& stage);

}  // namespace parbench
