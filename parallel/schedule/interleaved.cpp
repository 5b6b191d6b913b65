// Interleaved 1F1B (Megatron): stage s owns chunks s, s+p, ...; microbatches go in groups of p through chunk 0,
// then chunk 1, ...; backwards visit the chunks in reverse. Warm-up 2(p-s-1) + (v-1)p forwards, capped at m v.
#include "parallel/schedule/schedule.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace parbench {

namespace {
std::vector<std::vector<PipeAction>> interleaved_order(int p, int m, int v) {
  if (v == 1) return one_f_one_b_order(p, m, 1);
  const int total = m * v;
  auto nth = [&](int k, bool forward) {
    const int in_group = k % (p * v);
    const int chunk = forward ? in_group / p : v - 1 - in_group / p;
    const int microbatch = (k / (p * v)) * p + k % p;
    return PipeAction{forward ? PipeOp::forward : PipeOp::backward, microbatch, chunk};
  };
  std::vector<std::vector<PipeAction>> order(p);
  for (int s = 0; s < p; ++s) {
    const int warmup = std::min(2 * (p - s - 1) + (v - 1) * p, total);
    int f = 0, b = 0;
    while (f < warmup) order[s].push_back(nth(f++, true));
    while (f < total) {
      order[s].push_back(nth(f++, true));
      order[s].push_back(nth(b++, false));
    }
    while (b < total) order[s].push_back(nth(b++, false));
  }
  return order;
}

void validate_interleaved(int p, int m, int v) {
  validate_dimensions(p, m, v);
  if (m % p != 0)
    throw UsageError("interleaved needs microbatches to be a multiple of stages, got " + std::to_string(m) +
                     " microbatches for " + std::to_string(p) + " stages");
}
}  // namespace

ScheduleKind interleaved_schedule() {
  return {"interleaved", "1F1B over v model chunks per stage (Megatron)", false, true, validate_interleaved,
          interleaved_order, [](int p, int m, int v) { return double(p - 1) / double(v * m + p - 1); }};
}

}  // namespace parbench
