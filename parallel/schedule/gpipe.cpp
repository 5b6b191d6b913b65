// GPipe: every stage runs all m forwards, then all m backwards.
#include "parallel/schedule/schedule.h"

namespace parbench {

namespace {
std::vector<std::vector<PipeAction>> gpipe_order(int p, int m, int /*chunks*/) {
  std::vector<std::vector<PipeAction>> order(p);
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < m; ++i) order[s].push_back({PipeOp::forward, i, 0});
    for (int i = 0; i < m; ++i) order[s].push_back({PipeOp::backward, i, 0});
  }
  return order;
}
}  // namespace

ScheduleKind gpipe_schedule() {
  return {"gpipe", "all forwards, then all backwards", false, false,
          [](int p, int m, int v) { validate_dimensions(p, m, v), validate_single_chunk("gpipe", v); }, gpipe_order,
          [](int p, int m, int) { return double(p - 1) / double(m + p - 1); }};
}

}  // namespace parbench
