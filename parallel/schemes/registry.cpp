// The registry of schemes: one line per scheme file.
#include <algorithm>

#include "core/error.h"
#include "core/memory.h"
#include "core/text.h"
#include "parallel/schemes/data_parallel.h"
#include "parallel/schemes/model_parallel.h"

namespace parbench {

const std::vector<SchemeKind>& scheme_kinds() {
  using Spread = SchemeKind::Spread;
  auto zero = [](int stage) {
    return [stage](const TrainConfig& c, RankContext x) { return make_zero(c, x, stage); };
  };
  static const std::vector<SchemeKind> kinds = {
      {.name = "single", .summary = "one rank, the reference", .make = make_single},
      {.name = "dp", .summary = "parameter server: broadcast, scatter, reduce to rank 0, update there",
       .make = make_dp},
      {.name = "ddp", .summary = "replicas, bucketed gradient allreduce overlapping backward", .make = make_ddp},
      {.name = "zero1", .summary = "optimizer state sharded", .make = zero(1), .zero_stage = 1},
      {.name = "zero2", .summary = "optimizer state and gradients sharded", .make = zero(2), .zero_stage = 2},
      {.name = "zero3", .summary = "optimizer state, gradients and parameters sharded (alias fsdp)",
       .make = zero(3), .zero_stage = 3},
      {.name = "localsgd", .summary = "local steps, parameters averaged every --sync-every steps",
       .make = make_localsgd},
      {.name = "tp", .summary = "tensor parallel: Megatron column/row splits, vocabulary-parallel embedding and loss",
       .make = make_model_parallel, .model_parallel = true, .spread = Spread::tensor},
      {.name = "sp", .summary = "tensor parallel with sequence parallelism in the layernorm regions",
       .make = make_model_parallel, .model_parallel = true, .spread = Spread::tensor, .sequence_parallel = true},
      {.name = "mp", .summary = "naive model parallel: contiguous stages, the whole batch passed along",
       .make = make_model_parallel, .model_parallel = true, .spread = Spread::pipeline, .whole_batch = true},
      {.name = "pp", .summary = "pipeline parallel: a --schedule over --microbatches", .make = make_model_parallel,
       .model_parallel = true, .spread = Spread::pipeline},
      {.name = "hybrid", .summary = "--dp x --tp x --pp, with --dp-scheme ddp, zero1, zero2 or zero3 across data-parallel groups",
       .make = make_model_parallel, .model_parallel = true},
  };
  return kinds;
}

const SchemeKind& find_scheme_kind(std::string_view name) {
  if (name == "fsdp") name = "zero3";
  for (const auto& k : scheme_kinds())
    if (k.name == name) return k;
  throw UsageError("unknown scheme '" + std::string(name) +
                   "'; accepted: " + join(scheme_kinds(), ", ", &SchemeKind::name) + ", fsdp (= zero3)");
}

std::string scheme_help() {
  std::string help;
  for (const auto& k : scheme_kinds()) help += "\n  " + std::string(k.name) + ": " + std::string(k.summary);
  return help;
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
    const ParamLayout layout = make_layout(plan.model);
    const ParallelShape& sh = plan.shape;
    std::int64_t most = 0;
    for (int stage = 0; stage < sh.pp; ++stage) {
      std::int64_t numel = 0;
      for (int c = 0; c < sh.virtual_stages; ++c) {
        const UnitRange r = virtual_stage_units(cfg.model, c * sh.pp + stage, sh.pp * sh.virtual_stages);
        for (int u = r.first; u < r.last; ++u) numel += layout.units[std::size_t(u)].numel;
      }
      most = std::max(most, numel);
    }
    need = zero_closed_form(cfg, most, sh.dp, plan.zero_stage);
  }
  std::uint64_t total = 0;
  for (std::size_t b : need) total += b;
  return total;
}

}  // namespace

std::unique_ptr<Scheme> make_scheme(const TrainConfig& cfg, RankContext ctx) {
  const SchemeKind& kind = find_scheme_kind(cfg.scheme);
  if (cfg.offload && kind.zero_stage == 0 && !kind.model_parallel)
    throw UsageError("--offload applies to zero1, zero2 and zero3, not to scheme '" + cfg.scheme + "'");
  // Refuse before allocating: the closed-form model state alone must fit in the device's memory (or
  // --max-memory).
  check_memory_fits("the model state of scheme '" + cfg.scheme + "' (parameters, gradients, optimizer; closed form)",
                    closed_form_state_bytes(cfg, kind, ctx.comm.size()), ctx.alloc.device(), cfg.max_memory, 1,
                    "it does not fit: use fewer parameters, more ranks or zero3");
  return kind.make(cfg, ctx);
}

}  // namespace parbench
