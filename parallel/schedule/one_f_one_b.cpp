// 1F1B: stage s runs min(p-s-1, m) warm-up forwards, then alternates one forward and one backward, then
// drains the remaining backwards. Same bubble as GPipe, but at most min(m, p-s) microbatches in flight.
#include "parallel/schedule/schedule.h"

#include <algorithm>

namespace parbench {

std::vector<std::vector<PipeAction>> one_f_one_b_order(int p, int m, int /*chunks*/) {
  std::vector<std::vector<PipeAction>> order(p);
  for (int s = 0; s < p; ++s) {
    const int warmup = std::min(p - s - 1, m);
    int f = 0, b = 0;
    while (f < warmup) order[s].push_back({PipeOp::forward, f++, 0});
    while (f < m) {
      order[s].push_back({PipeOp::forward, f++, 0});
      order[s].push_back({PipeOp::backward, b++, 0});
    }
    while (b < m) order[s].push_back({PipeOp::backward, b++, 0});
  }
  return order;
}

ScheduleKind one_f_one_b_schedule() {
  return {"1f1b", "warm-up forwards, then one forward one backward, then cool-down backwards", false, false,
          [](int p, int m, int v) { validate_full_pipeline("1f1b", p, m, v); }, one_f_one_b_order,
          [](int p, int m, int) { return double(p - 1) / double(m + p - 1); }};
}

}  // namespace parbench
