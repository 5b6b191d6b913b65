// The registry of schemes: one line per scheme file.
#include "core/error.h"
#include "core/memory.h"
#include "parallel/schemes/data_parallel.h"

namespace parbench {

const std::vector<SchemeKind>& scheme_kinds() {
  static const std::vector<SchemeKind> kinds = {
      {"single", "one rank, the reference", make_single},
      {"dp", "parameter server: broadcast, scatter, reduce to rank 0, update there", make_dp},
      {"ddp", "replicas, bucketed gradient allreduce overlapping backward", make_ddp},
      {"zero1", "optimizer state sharded", [](auto& c, auto x) { return make_zero(c, x, 1); }},
      {"zero2", "optimizer state and gradients sharded", [](auto& c, auto x) { return make_zero(c, x, 2); }},
      {"zero3", "optimizer state, gradients and parameters sharded (fsdp)",
       [](auto& c, auto x) { return make_zero(c, x, 3); }},
      {"localsgd", "local steps, parameters averaged every --sync-every steps", make_localsgd},
      {"tp", "tensor parallel: Megatron column/row splits, vocabulary-parallel embedding and loss",
       make_model_parallel, true},
      {"sp", "tensor parallel with sequence parallelism in the layernorm regions", make_model_parallel, true},
      {"mp", "naive model parallel: contiguous stages, the whole batch passed along", make_model_parallel, true},
      {"pp", "pipeline parallel: --schedule gpipe, 1f1b, interleaved or zb-h1 over --microbatches",
       make_model_parallel, true},
      {"hybrid", "--dp x --tp x --pp, with --dp-scheme ddp, zero1, zero2 or zero3 across data-parallel groups",
       make_model_parallel, true},
  };
  return kinds;
}

const SchemeKind& find_scheme_kind(std::string_view name) {
  if (name == "fsdp") name = "zero3";
  std::string known;
  for (const auto& k : scheme_kinds()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  throw UsageError("unknown scheme '" + std::string(name) + "'; accepted: " + known + ", fsdp (= zero3)");
}

std::unique_ptr<Scheme> make_scheme(const TrainConfig& cfg, RankContext ctx) {
  const SchemeKind& kind = find_scheme_kind(cfg.scheme);
  if (kind.model_parallel) return kind.make(cfg, ctx);  // refuses its own bad options
  if (cfg.offload && kind.name.substr(0, 4) != "zero")
    throw UsageError("--offload applies to zero1, zero2 and zero3, not to scheme '" + cfg.scheme + "'");
  // Refuse before allocating: the closed-form model state alone must fit in the device's memory.
  const int stage = kind.name.substr(0, 4) == "zero" ? kind.name[4] - '0' : 0;
  const int n = kind.name == "dp" || kind.name == "single" ? 1 : ctx.comm.size();
  cfg.model.validate();
  MemSplit need = zero_closed_form(cfg, make_layout(cfg.model).parameters, n, stage);
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
