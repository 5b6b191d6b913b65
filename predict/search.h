// Layout search: every (tp, pp, dp, v, micro-batch, schedule, ZeRO stage, recompute, sp) that the model and GPU
// count allow, predicted, kept when it fits in memory, ranked by step time; and, per (tp, pp) family, why its best
// layout lost to the winner.
#pragma once
#include <string>
#include <vector>

#include "predict/predict.h"

namespace parbench::predict {

struct Candidate {
  Layout layout;
  Prediction prediction;
};

struct FamilyReport {
  int tp = 1, pp = 1;
  bool any_fits = false;
  Candidate best;      // the fastest fitting layout, or (nothing fits) the one with the smallest peak
  std::string reason;  // why it lost: memory, bubble, communication, recomputation, ... ("winner" for the best)
};

struct SearchResult {
  std::vector<Candidate> fitting;  // by step time, fastest first
  std::vector<FamilyReport> families;
  int enumerated = 0;
};

// `base` gives the model, the GPU count, the global batch, dtype and optimizer; the rest is searched.
std::vector<Layout> enumerate_layouts(const Layout& base, const SystemModel& sys);
SearchResult search_layouts(const Layout& base, const SystemModel& sys);

}  // namespace parbench::predict
