// The model-parallel family's plan: the dp x tp x pp grid and each rank's place in it (which units each virtual
// pipeline stage holds is the shape's stage_blocks, parallel/plan/partition.h). Used by the scheme and by the tests.
#pragma once
#include "models/model.h"
#include "parallel/train.h"

namespace parbench {

// rank = (pp_rank * dp + dp_rank) * tp + tp_rank: tensor-parallel ranks adjacent (Megatron's order).
struct ParallelGrid {
  int dp = 1, tp = 1, pp = 1;
  int dp_rank = 0, tp_rank = 0, pp_rank = 0;
  static ParallelGrid of(int rank, int dp, int tp, int pp);
};

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
