// A training run's configuration: the model, batch sizes, optimizer, and the scheme, schedule and collective
// implementation as registry entries; apart from the training stack, so that command-line checks link it alone.
#pragma once
#include <cstdint>

#include "kernels/op_params.h"
#include "models/config.h"
#include "parallel/plan/partition.h"
#include "parallel/plan/plan.h"
#include "parallel/schedule/schedule.h"
#include "parallel/scheme_kinds.h"

namespace parbench {

class Algorithm;  // collectives/communicator/algorithm.h

struct TrainConfig {
  ModelConfig model;
  const SchemeKind* scheme = &find_scheme_kind("single");  // registry entries, resolved from their names once
  int global_batch = 8;
  int micro_batch = 0;  // 0: global batch / data-parallel ranks (no accumulation)
  OptimizerKind optimizer = OptimizerKind::adamw;
  ops::AdamWConfig adamw;  // lr, betas, eps, weight decay (SGD uses lr and weight decay)
  const Algorithm* impl = nullptr;  // collective implementation (--impl; null: auto, find_implementation)
  double bucket_mb = 25;      // ddp
  bool overlap = true;        // ddp: launch buckets during backward
  int sync_every = 1;         // localsgd
  bool offload = false;       // zero1..3: optimizer state and update in host memory
  std::uint64_t seed = 1234;
  // Model-parallel schemes (tp, sp, mp, pp, hybrid); 0 means "derived from the rank count and the scheme".
  int tp = 0, pp = 0, dp = 0;
  ScheduleRef schedule = ScheduleRef::parse("1f1b");  // pp, hybrid: a registered schedule or a file
  int microbatches = 0;    // pp, hybrid: 0 means global batch / (dp x micro-batch), or pp when unset
  int virtual_stages = 1;  // multi-chunk schedules: model chunks per stage
  PartitionRequest partition;  // pp, hybrid: how the blocks are spread over the virtual stages
  const SchemeKind* dp_scheme = &find_dp_scheme_kind("ddp");  // hybrid: ddp or a ZeRO stage across dp groups
  std::uint64_t max_memory = 0;   // --max-memory: bytes per rank the model state may take (0: the device's)
};

// Checks batch sizes against the data-parallel rank count and returns the accumulation steps.
// UsageError names the values: "global batch 10 is not divisible by 4 ranks x micro-batch 2".
int accumulation_steps(const TrainConfig& c, int dp_ranks);

}  // namespace parbench
