// The registry of schemes: one line per scheme file.
#include "core/error.h"
#include "core/memory.h"
#include "core/text.h"
#include "parallel/schemes/data_parallel.h"

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

std::unique_ptr<Scheme> make_scheme(const TrainConfig& cfg, RankContext ctx) {
  const SchemeKind& kind = find_scheme_kind(cfg.scheme);
  if (kind.model_parallel) return kind.make(cfg, ctx);  // refuses its own bad options
  if (cfg.offload && kind.zero_stage == 0)
    throw UsageError("--offload applies to zero1, zero2 and zero3, not to scheme '" + cfg.scheme + "'");
  // Refuse before allocating: the closed-form model state alone must fit in the device's memory.
  cfg.model.validate();
  MemSplit need = zero_closed_form(cfg, make_layout(cfg.model).parameters, ctx.comm.size(), kind.zero_stage);
  std::size_t total = 0;
  for (std::size_t b : need) total += b;
  const std::size_t have = device_memory_bytes(ctx.alloc.device());
  if (total > have)
    throw UsageError("the model state of scheme '" + cfg.scheme + "' does not fit: " + std::to_string(total >> 20) +
                     " MiB per rank (parameters, gradients, optimizer) but " + device_name(ctx.alloc.device()) +
                     " has " + std::to_string(have >> 20) + " MiB; use fewer parameters, more ranks or zero3");
  return kind.make(cfg, ctx);
}

}  // namespace parbench
