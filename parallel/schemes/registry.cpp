// The schemes' implementations by name (their kinds are in parallel/scheme_kinds.cpp), and make_scheme.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "base/error.h"
#include "core/memory.h"
#include "parallel/schemes/data_parallel.h"
#include "parallel/schemes/model_parallel.h"

namespace parbench {

MakeScheme scheme_implementation(const SchemeKind& kind) {
  // One implementation serves every model-parallel kind and one every ZeRO stage (they read the kind's facts);
  // the others by name.
  if (kind.model_parallel) return make_model_parallel;
  if (kind.zero_stage > 0) return make_zero;
  static const std::pair<std::string_view, MakeScheme> by_name[] = {
      {"single", make_single},
      {"dp", make_dp},
      {"ddp", make_ddp},
      {"localsgd", make_localsgd},
  };
  for (const auto& [name, make] : by_name)
    if (name == kind.name) return make;
  throw std::logic_error("scheme '" + std::string(kind.name) + "' has no implementation in schemes/registry.cpp");
}

namespace {

// The closed-form model state (parameters, gradients, optimizer; --estimate-memory's) of the rank that holds
// the most: a data-parallel scheme shards the whole model over the ranks, a model-parallel one holds its tensor-
// parallel slice of its pipeline stage's layers, sharded over its data-parallel group.
std::uint64_t closed_form_state_bytes(const TrainConfig& cfg, const SchemeKind& kind, int ranks) {
  MemSplit need{};
  if (!kind.model_parallel) {
    cfg.model.validate();
    need = zero_closed_form(cfg, make_layout(cfg.model).parameters, ranks, kind.zero_stage);
  } else {
    const ModelParallelPlan plan = plan_model_parallel(cfg, ranks);  // refuses the scheme's own bad options
    const std::vector<std::int64_t> numel = stage_numel(plan.model, plan.shape.pp, plan.shape.virtual_stages, plan.shape.stage_blocks);
    need = zero_closed_form(cfg, *std::max_element(numel.begin(), numel.end()), plan.shape.dp, plan.zero_stage);
  }
  std::uint64_t total = 0;
  for (std::size_t b : need) total += b;
  return total;
}

}  // namespace

std::unique_ptr<Scheme> make_scheme(const TrainConfig& cfg, RankContext ctx) {
  const SchemeKind& kind = *cfg.scheme;
  const std::string name(kind.name);
  if (cfg.offload && kind.zero_stage == 0 && !kind.model_parallel)
    throw UsageError("--offload applies to zero1, zero2 and zero3, not to scheme '" + name + "'");
  // Refuse before allocating: the closed-form model state alone must fit in the device's memory (or
  // --max-memory).
  check_memory_fits("the model state of scheme '" + name + "' (parameters, gradients, optimizer; closed form)",
                    closed_form_state_bytes(cfg, kind, ctx.comm.size()), ctx.alloc.device(), cfg.max_memory, 1,
                    "it does not fit: use fewer parameters, more ranks or zero3");
  return scheme_implementation(kind)(cfg, ctx);
}

}  // namespace parbench
