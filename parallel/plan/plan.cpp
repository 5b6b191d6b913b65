// Stage partition, per-stage parameter counts and the ZeRO closed forms.
#include "parallel/plan/plan.h"

namespace parbench {

UnitRange virtual_stage_units(const ModelConfig& c, int virtual_stage, int virtual_stages) {
  const int per = c.layers / virtual_stages;
  if (c.kind == ModelKind::mlp) return {virtual_stage * per, (virtual_stage + 1) * per};
  const int units = c.layers + 2;  // embedding, blocks, head
  return {virtual_stage == 0 ? 0 : 1 + virtual_stage * per,
          virtual_stage == virtual_stages - 1 ? units : 1 + (virtual_stage + 1) * per};
}

std::vector<std::int64_t> stage_numel(const ModelConfig& c, int pp, int chunks) {
  const ParamLayout layout = make_layout(c);
  std::vector<std::int64_t> numel(std::size_t(pp), 0);
  for (int stage = 0; stage < pp; ++stage)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const UnitRange r = virtual_stage_units(c, chunk * pp + stage, pp * chunks);
      for (int u = r.first; u < r.last; ++u) numel[std::size_t(stage)] += layout.units[std::size_t(u)].numel;
    }
  return numel;
}

std::int64_t optimizer_state_bytes_per_param(OptimizerKind optimizer, DType dtype) {
  return (optimizer == OptimizerKind::adamw ? 8 : 0) + (dtype == DType::bf16 ? 4 : 0);
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
