// Training-layout arithmetic without the training stack: which units each virtual pipeline stage holds, the
// parameters each stage holds, and the ZeRO closed forms of the model state. The schemes and the predictor share it.
#pragma once
#include <cstdint>
#include <vector>

#include "core/allocator.h"
#include "base/dtype.h"
#include "models/config.h"

namespace parbench {

enum class OptimizerKind { adamw, sgd };

// A rank's place in the dp x tp x pp grid of the model-parallel schemes, ranks numbered stage by stage with the
// tensor-parallel ranks adjacent (Megatron's order, so that they share a node):
//   rank = (pp_rank * dp + dp_rank) * tp + tp_rank.
// The schemes place their ranks by it, and the predictor's bound play binds them to cores by it.
struct ParallelGrid {
  int dp = 1, tp = 1, pp = 1;
  int dp_rank = 0, tp_rank = 0, pp_rank = 0;
  static ParallelGrid of(int rank, int dp, int tp, int pp);
  int rank() const { return (pp_rank * dp + dp_rank) * tp + tp_rank; }
};

// Units of virtual stage k of n: an equal share of the layers; the embedding with the first, the head with the last.
// (Other shares: parallel/plan/partition.h.)
UnitRange virtual_stage_units(const ModelConfig& c, int virtual_stage, int virtual_stages);

// Elements (layout numel, padding included) each of `pp` pipeline ranks holds when every rank runs `chunks` model
// chunks: virtual stage k runs on rank k % pp. `c` is one tensor-parallel rank's model (its tp set). `blocks`: the
// blocks of each virtual stage (partition.h); empty: equal shares.
std::vector<std::int64_t> stage_numel(const ModelConfig& c, int pp, int chunks, const std::vector<int>& blocks = {});

// 16-bit weights keep a 32-bit master copy in the optimizer state: the update reads and writes it, and writes the
// weights from it.
inline bool keeps_master_copy(DType dtype) { return dtype == DType::bf16; }
// Bytes of optimizer state per parameter: AdamW 8 (m, v) or SGD 0, plus 4 for the master copy (keeps_master_copy).
std::int64_t optimizer_state_bytes_per_param(OptimizerKind optimizer, DType dtype);

// The closed forms (ZeRO paper) for one rank: bytes of parameters, gradients and optimizer state for a model of
// psi parameters in `dtype` over n data-parallel ranks, with ZeRO stage `stage`'s sharding (0 = replicated).
MemSplit zero_closed_form(DType dtype, OptimizerKind optimizer, std::int64_t psi, int n, int stage);

}  // namespace parbench
