// The combinations bench_train --list-runnable prints, derived from the scheme and schedule registries.
#include "benchmarks/train/runnable.h"

#include <ostream>

#include "base/error.h"
#include "parallel/schedule/schedule.h"
#include "parallel/scheme_kinds.h"

namespace parbench::train_bench {
namespace {

constexpr int kStages = 2;
constexpr int kMicrobatches = 2 * kStages;  // a steady state between warm-up and cool-down

// Model chunks per stage: 2 for a multi-chunk schedule (so its interleaving runs), else 1; 0 when the schedule
// refuses the 2-stage pipeline over kMicrobatches.
int chunks_for(const ScheduleKind& s) {
  const int chunks = s.multi_chunk ? 2 : 1;
  try {
    s.validate(kStages, kMicrobatches, chunks);
    return chunks;
  } catch (const UsageError&) {
    return 0;
  }
}

void add_pipelines(const SchemeKind& k, std::vector<Runnable>& out) {
  const std::string scheme(k.name), stages = std::to_string(kStages);
  if (k.whole_batch) {
    out.push_back({scheme, kStages, kStages, "whole", {"--scheme", scheme, "--pp", stages}});
    return;
  }
  for (const ScheduleKind& s : schedule_kinds()) {
    const int chunks = chunks_for(s);
    if (chunks == 0) continue;
    Runnable r{scheme + "_" + std::string(s.name), kStages, kStages * chunks, "model",
               {"--scheme", scheme, "--pp", stages, "--schedule", std::string(s.name), "--microbatches",
                std::to_string(kMicrobatches)}};
    if (chunks > 1) r.args.insert(r.args.end(), {"--virtual-stages", std::to_string(chunks)});
    out.push_back(std::move(r));
  }
}

// Hybrid: a 2 x 2 grid of data and tensor parallelism under each scheme --dp-scheme accepts (ddp, the ZeRO stages).
void add_hybrid(const SchemeKind& k, std::vector<Runnable>& out) {
  for (const SchemeKind& dp : scheme_kinds()) {
    if (!is_dp_scheme(dp)) continue;
    out.push_back({std::string(k.name) + "_" + std::string(dp.name), 4, 1, "model",
                   {"--scheme", std::string(k.name), "--dp", "2", "--tp", "2", "--dp-scheme", std::string(dp.name)}});
  }
}

}  // namespace

std::vector<Runnable> runnable_combinations() {
  std::vector<Runnable> out;
  for (const SchemeKind& k : scheme_kinds()) {
    const std::string scheme(k.name);
    if (!k.model_parallel)  // single is the one-rank reference that --check compares against
      out.push_back({scheme, scheme == "single" ? 1 : 2, 1, "data", {"--scheme", scheme}});
    else if (k.spread == SchemeKind::Spread::tensor)
      out.push_back({scheme, 2, 1, "model", {"--scheme", scheme, "--tp", "2"}});
    else if (k.spread == SchemeKind::Spread::pipeline)
      add_pipelines(k, out);
    else
      add_hybrid(k, out);
  }
  return out;
}

void print_runnable(std::ostream& os) {
  os << "# name ranks layers family args\n";
  for (const Runnable& r : runnable_combinations()) {
    os << r.name << ' ' << r.ranks << ' ' << r.layers << ' ' << r.family;
    for (const std::string& a : r.args) os << ' ' << a;
    os << '\n';
  }
}

}  // namespace parbench::train_bench
