// The parallelism schemes by --scheme name: what the options, the drivers and the plan know of each. No
// implementation is referenced here (schemes/registry.cpp maps each name to its own), so checking a command line
// links without the kernels, models and schemes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace parbench {

struct SchemeKind {
  // Which degree takes all the ranks when --tp/--pp/--dp leave it open (model-parallel schemes).
  enum class Spread { data, tensor, pipeline };
  std::string_view name;
  std::string_view summary;  // one line for --help
  bool model_parallel = false;  // tp, sp, mp, pp, hybrid: --tp/--pp/--dp/--microbatches apply, own checks
  int zero_stage = 0;           // data parallel: 1 shards optimizer state, 2 also gradients, 3 also parameters
  Spread spread = Spread::data;
  bool sequence_parallel = false;  // sp
  bool whole_batch = false;        // mp: the batch passes from stage to stage without microbatches
};
const std::vector<SchemeKind>& scheme_kinds();
const SchemeKind& find_scheme_kind(std::string_view name);  // aliases: fsdp = zero3; UsageError otherwise
// --dp-scheme, what hybrid runs across its data-parallel groups: ddp or a ZeRO stage's kind (is_dp_scheme);
// UsageError otherwise.
bool is_dp_scheme(const SchemeKind& k);
const SchemeKind& find_dp_scheme_kind(std::string_view name);
// "single: one rank, the reference" lines for --help.
std::string scheme_help();

}  // namespace parbench
