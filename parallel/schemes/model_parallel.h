// The model-parallel family's plan: the dp x tp x pp grid (each rank's place in it: ParallelGrid, parallel/plan/plan.h;
// which units each virtual pipeline stage holds: the shape's stage_blocks, parallel/plan/partition.h). Used by the
// scheme and by the tests.
#pragma once
#include "models/model.h"
#include "parallel/train.h"

namespace parbench {

struct ModelParallelPlan {
  ParallelShape shape;
  bool sequence_parallel = false;
  int zero_stage = 0;  // of the data-parallel dimension: 0 replicated (ddp), 1..3 ZeRO (--dp-scheme)
  ModelConfig model;  // the model as each rank builds it (tensor-parallel degree set)
};

// Resolves the degrees, schedule and microbatches of schemes tp, sp, mp, pp and hybrid for `ranks` ranks, and
// refuses bad configurations with a UsageError naming the values.
ModelParallelPlan plan_model_parallel(const TrainConfig& cfg, int ranks);

}  // namespace parbench
