// Enumerates layouts, predicts each, and explains the families that lost.
#include "predict/search.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"
#include "parallel/schedule/schedule.h"

namespace parbench::predict {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

bool valid(const Layout& l) {
  try {
    validate_layout(l);
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

// The pipeline variants of a (tp, pp, dp, micro-batch) grid point: one stage, or every registered schedule
// (the multi-chunk ones with 2, 3 or 4 chunks per stage).
std::vector<std::pair<ScheduleRef, int>> schedules_for(int pp) {
  if (pp == 1) return {{ScheduleRef::parse("1f1b"), 1}};
  std::vector<std::pair<ScheduleRef, int>> out;
  for (const ScheduleKind& k : schedule_kinds()) {
    if (k.multi_chunk)
      for (int v : {2, 3, 4}) out.push_back({ScheduleRef{&k, {}}, v});
    else out.push_back({ScheduleRef{&k, {}}, 1});
  }
  return out;
}

// The part of the time split where `loser` spends most more than `winner`.
std::string why_lost(const TimeSplit& loser, const TimeSplit& winner) {
  const std::pair<const char*, double> parts[] = {
      {"bubble", loser.bubble - winner.bubble},
      {"tensor-parallel communication", loser.tp_comm - winner.tp_comm},
      {"pipeline communication", loser.pp_comm - winner.pp_comm},
      {"data-parallel communication", loser.dp_comm - winner.dp_comm},
      {"recomputation", loser.recompute - winner.recompute},
      {"compute efficiency (smaller matmuls)", loser.forward + loser.backward - winner.forward - winner.backward},
      {"optimizer", loser.optimizer - winner.optimizer}};
  const auto* worst = std::max_element(std::begin(parts), std::end(parts),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
  return std::string(worst->first) + " (+" + std::to_string(std::llround(worst->second * 1e3)) + " ms)";
}

}  // namespace

std::vector<Layout> enumerate_layouts(const Layout& base, const SystemModel& sys) {
  std::vector<Layout> out;
  const std::vector<Recompute> recomputes =
      base.model.flash_attention ? std::vector<Recompute>{Recompute::none, Recompute::full}
                                 : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full};
  for (int tp : divisors(base.gpus)) {
    if (tp > sys.node_size()) continue;  // tensor parallelism stays inside an NVLink domain
    for (int pp : divisors(base.gpus / tp)) {
      if (base.model.layers % pp != 0) continue;
      const int dp = base.gpus / (tp * pp);
      for (int mb : {1, 2, 4, 8}) {
        if (base.global_batch % (dp * mb) != 0) continue;
        for (const auto& [schedule, v] : schedules_for(pp))
          for (int zero : dp > 1 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0})
            for (Recompute rc : recomputes)
              for (bool sp : tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
                Layout l = base;
                l.tp = tp, l.pp = pp, l.dp = dp, l.micro_batch = mb, l.schedule = schedule, l.virtual_stages = v;
                l.zero_stage = zero, l.recompute = rc, l.sequence_parallel = sp;
                if (valid(l)) out.push_back(l);
              }
      }
    }
  }
  return out;
}

SearchResult search_layouts(const Layout& base, const SystemModel& sys) {
  SearchResult r;
  std::map<std::pair<int, int>, FamilyReport> families;
  const std::vector<Layout> layouts = enumerate_layouts(base, sys);
  r.enumerated = int(layouts.size());
  for (const Layout& l : layouts) {
    Candidate c{l, predict_step(l, sys, /*split_pp_comm=*/false)};
    FamilyReport& f = families[{l.tp, l.pp}];
    f.tp = l.tp, f.pp = l.pp;
    const bool better = c.prediction.fits ? (!f.any_fits || c.prediction.time.step < f.best.prediction.time.step)
                                          : (!f.any_fits && (f.best.prediction.peak_bytes == 0 ||
                                                             c.prediction.peak_bytes < f.best.prediction.peak_bytes));
    if (better) f.best = c;
    f.any_fits = f.any_fits || c.prediction.fits;
    if (c.prediction.fits) r.fitting.push_back(std::move(c));
  }
  std::sort(r.fitting.begin(), r.fitting.end(),
            [](const Candidate& a, const Candidate& b) { return a.prediction.time.step < b.prediction.time.step; });
  for (auto& [key, f] : families) {
    if (!f.any_fits)
      f.reason = "memory: its smallest peak is " + std::to_string(std::llround(f.best.prediction.peak_bytes / 1e9)) +
                 " GB, more than the GPU's " + std::to_string(std::llround(sys.gpu.hbm_bytes / 1e9)) + " GB";
    else if (f.best.layout.tp == r.fitting.front().layout.tp && f.best.layout.pp == r.fitting.front().layout.pp)
      f.reason = "winner";
    else f.reason = why_lost(f.best.prediction.time, r.fitting.front().prediction.time);
    r.families.push_back(f);
  }
  std::sort(r.families.begin(), r.families.end(), [](const FamilyReport& a, const FamilyReport& b) {
    if (a.any_fits != b.any_fits) return a.any_fits;
    return a.best.prediction.time.step < b.best.prediction.time.step;
  });
  return r;
}

}  // namespace parbench::predict
