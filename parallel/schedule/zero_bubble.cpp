// ZB-H1 (zero-bubble pipeline, 1F1B memory): the backward is split into BI (input gradient, on the critical path)
// and W (weight gradient, deferrable). Forwards and BIs keep 1F1B's order; a W runs where the stage would
// otherwise wait, or when a new forward would hold more than min(m, p) microbatches' activations (forward done,
// W not yet): 1F1B's peak, the one of its first stage. The order is found by playing the schedule once with unit
// costs (F = BI = W = 1); with those costs its bubble is (p-1)/(3m+p-1), a third of 1F1B's (p-1) idle slots of 3.
#include <algorithm>
#include <deque>

#include "parallel/schedule/schedule.h"

namespace parbench {

namespace {
std::vector<std::vector<PipeAction>> zb_h1_order(int p, int m, int /*chunks*/) {
  // The critical-path order: 1F1B with BI in place of B.
  auto main_order = one_f_one_b_order(p, m, 1);
  for (auto& stage : main_order)
    for (auto& a : stage)
      if (a.op == PipeOp::backward) a.op = PipeOp::backward_input;

  constexpr long kNotYet = -1;
  std::vector<std::vector<long>> f_end(p, std::vector<long>(m, kNotYet)), bi_end = f_end;
  std::vector<std::size_t> next(p, 0);
  std::vector<std::deque<int>> pending_w(p);
  std::vector<int> in_flight(p, 0);  // forwards whose weight gradient has not run
  std::vector<long> busy_until(p, 0);
  const int limit = std::min(m, p);
  std::vector<std::vector<PipeAction>> order(p);
  std::size_t done = 0, total = std::size_t(3) * p * m;

  auto ready = [&](int s, const PipeAction& a, long t) {
    if (a.op == PipeOp::forward) return s == 0 || (f_end[s - 1][a.microbatch] != kNotYet && f_end[s - 1][a.microbatch] <= t);
    bool own_forward = f_end[s][a.microbatch] != kNotYet && f_end[s][a.microbatch] <= t;
    bool grad_in = s == p - 1 || (bi_end[s + 1][a.microbatch] != kNotYet && bi_end[s + 1][a.microbatch] <= t);
    return own_forward && grad_in;
  };
  for (long t = 0; done < total; ++t) {
    for (int s = 0; s < p; ++s) {
      if (busy_until[s] > t) continue;
      PipeAction run{PipeOp::backward_weight, -1, 0};
      if (next[s] < main_order[s].size()) {
        const PipeAction& a = main_order[s][next[s]];
        bool over_bound = a.op == PipeOp::forward && in_flight[s] >= limit;
        if (!over_bound && ready(s, a, t)) run = a;
      }
      if (run.microbatch < 0) {
        if (pending_w[s].empty()) continue;  // idle this slot
        run.microbatch = pending_w[s].front();
        pending_w[s].pop_front();
        --in_flight[s];
      } else {
        ++next[s];
        if (run.op == PipeOp::forward) {
          f_end[s][run.microbatch] = t + 1;
          ++in_flight[s];
        } else {
          bi_end[s][run.microbatch] = t + 1;
          pending_w[s].push_back(run.microbatch);
        }
      }
      order[s].push_back(run);
      busy_until[s] = t + 1;
      ++done;
    }
  }
  return order;
}
}  // namespace

ScheduleKind zb_h1_schedule() {
  return {"zb-h1", "1F1B with the backward split into input and weight gradients; weight passes fill idle slots",
          true, false, [](int p, int m, int v) { validate_full_pipeline("zb-h1", p, m, v); }, zb_h1_order,
          // Only F + BI - W = 1 unit of each of the p-1 warm-up slots of 3 stays idle.
          [](int p, int m, int) { return double(p - 1) / double(3 * m + p - 1); }};
}

}  // namespace parbench
