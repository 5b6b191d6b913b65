// The schemes, one line each; their implementations are named in schemes/registry.cpp.
#include "parallel/scheme_kinds.h"

#include "base/error.h"
#include "base/text.h"

namespace parbench {

const std::vector<SchemeKind>& scheme_kinds() {
  using Spread = SchemeKind::Spread;
  static const std::vector<SchemeKind> kinds = {
      {.name = "single", .summary = "one rank, the reference"},
      {.name = "dp", .summary = "parameter server: broadcast, scatter, reduce to rank 0, update there"},
      {.name = "ddp", .summary = "replicas, bucketed gradient allreduce overlapping backward"},
      {.name = "zero1", .summary = "optimizer state sharded", .zero_stage = 1},
      {.name = "zero2", .summary = "optimizer state and gradients sharded", .zero_stage = 2},
      {.name = "zero3", .summary = "optimizer state, gradients and parameters sharded (alias fsdp)", .zero_stage = 3},
      {.name = "localsgd", .summary = "local steps, parameters averaged every --sync-every steps"},
      {.name = "tp", .summary = "tensor parallel: Megatron column/row splits, vocabulary-parallel embedding and loss",
       .model_parallel = true, .spread = Spread::tensor},
      {.name = "sp", .summary = "tensor parallel with sequence parallelism in the layernorm regions",
       .model_parallel = true, .spread = Spread::tensor, .sequence_parallel = true},
      {.name = "mp", .summary = "naive model parallel: contiguous stages, the whole batch passed along",
       .model_parallel = true, .spread = Spread::pipeline, .whole_batch = true},
      {.name = "pp", .summary = "pipeline parallel: a --schedule over --microbatches", .model_parallel = true,
       .spread = Spread::pipeline},
      {.name = "hybrid",
       .summary = "--dp x --tp x --pp, with --dp-scheme ddp, zero1, zero2 or zero3 across data-parallel groups",
       .model_parallel = true},
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

bool is_dp_scheme(const SchemeKind& k) { return k.name == "ddp" || k.zero_stage > 0; }

const SchemeKind& find_dp_scheme_kind(std::string_view name) {
  std::vector<std::string_view> accepted;
  for (const SchemeKind& k : scheme_kinds()) {
    if (!is_dp_scheme(k)) continue;
    if (k.name == name) return k;
    accepted.push_back(k.name);
  }
  throw UsageError("--dp-scheme '" + std::string(name) + "' is unknown; accepted: " + join(accepted, ", "));
}

std::string scheme_help() {
  std::string help;
  for (const auto& k : scheme_kinds()) help += "\n  " + std::string(k.name) + ": " + std::string(k.summary);
  return help;
}

}  // namespace parbench
