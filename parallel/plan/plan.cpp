// Stage partition, per-stage parameter counts and the ZeRO closed forms.
#include "parallel/plan/plan.h"

#include "parallel/plan/partition.h"

namespace parbench {

UnitRange virtual_stage_units(const ModelConfig& c, int virtual_stage, int virtual_stages) {
  return partition_units(c, virtual_stage, std::vector<int>(std::size_t(virtual_stages), c.layers / virtual_stages));
}

std::vector<std::int64_t> stage_numel(const ModelConfig& c, int pp, int chunks, const std::vector<int>& blocks) {
  const ParamLayout layout = make_layout(c);
  const std::vector<int> shares = blocks.empty() ? std::vector<int>(std::size_t(pp * chunks), c.layers / (pp * chunks))
                                                 : blocks;
  std::vector<std::int64_t> numel(std::size_t(pp), 0);
  for (int stage = 0; stage < pp; ++stage)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const UnitRange r = partition_units(c, chunk * pp + stage, shares);
      for (int u = r.first; u < r.last; ++u) numel[std::size_t(stage)] += layout.units[std::size_t(u)].numel;
    }
  return numel;
}

ParallelGrid ParallelGrid::of(int rank, int dp, int tp, int pp) {
  ParallelGrid g{dp, tp, pp};
  g.tp_rank = rank % tp;
  g.dp_rank = rank / tp % dp;
  g.pp_rank = rank / (tp * dp);
  return g;
}

std::int64_t optimizer_state_bytes_per_param(OptimizerKind optimizer, DType dtype) {
  return (optimizer == OptimizerKind::adamw ? 8 : 0) + (keeps_master_copy(dtype) ? 4 : 0);
}

MemSplit zero_closed_form(DType dtype, OptimizerKind optimizer, std::int64_t psi, int n, int stage) {
  const std::int64_t p = std::int64_t(dtype_size(dtype)), k = optimizer_state_bytes_per_param(optimizer, dtype);
  MemSplit m{};
  m[int(MemCategory::parameters)] = std::size_t(stage >= 3 ? p * psi / n : p * psi);
  m[int(MemCategory::gradients)] = std::size_t(stage >= 2 ? p * psi / n : p * psi);
  m[int(MemCategory::optimizer)] = std::size_t(stage >= 1 ? k * psi / n : k * psi);
  return m;
}

}  // namespace parbench
