// Schedule registry, generation and insertion of the stage-to-stage sends and receives.
#include "parallel/schedule/schedule.h"

#include "core/error.h"

namespace parbench {

std::string_view pipe_op_name(PipeOp op) {
  switch (op) {
    case PipeOp::forward: return "F";
    case PipeOp::backward: return "B";
    case PipeOp::backward_input: return "BI";
    case PipeOp::backward_weight: return "W";
    case PipeOp::send_activation: return "send_act";
    case PipeOp::recv_activation: return "recv_act";
    case PipeOp::send_gradient: return "send_grad";
    case PipeOp::recv_gradient: return "recv_grad";
  }
  return "?";
}

bool is_compute(PipeOp op) {
  return op == PipeOp::forward || op == PipeOp::backward || op == PipeOp::backward_input ||
         op == PipeOp::backward_weight;
}

namespace {

void validate_common(int p, int m, int v) {
  if (p < 1) throw UsageError("pipeline stages " + std::to_string(p) + " must be >= 1");
  if (m < 1) throw UsageError("microbatches " + std::to_string(m) + " must be >= 1");
  if (v < 1) throw UsageError("virtual stages per rank " + std::to_string(v) + " must be >= 1");
}

void single_chunk(std::string_view name, int v) {
  if (v != 1)
    throw UsageError(std::string(name) + " has one model chunk per stage, got --virtual-stages " +
                     std::to_string(v) + "; use the interleaved schedule for v > 1");
}

// 1F1B-shaped schedules: one chunk per stage and a full pipeline (m >= p) after the warm-up.
void validate_one_f_one_b(std::string_view name, int p, int m, int v) {
  validate_common(p, m, v), single_chunk(name, v);
  if (m < p)
    throw UsageError(std::string(name) + " needs microbatches >= stages, got " + std::to_string(m) +
                     " microbatches for " + std::to_string(p) + " stages; use gpipe or more microbatches");
}

}  // namespace

const std::vector<ScheduleKind>& schedule_kinds() {
  static const std::vector<ScheduleKind> kinds = {
      {"gpipe", "all forwards, then all backwards", false,
       [](int p, int m, int v) { validate_common(p, m, v), single_chunk("gpipe", v); }, gpipe_order},
      {"1f1b", "warm-up forwards, then one forward one backward, then cool-down backwards", false,
       [](int p, int m, int v) { validate_one_f_one_b("1f1b", p, m, v); }, one_f_one_b_order},
      {"interleaved", "1F1B over v model chunks per stage (Megatron)", false,
       [](int p, int m, int v) {
         validate_common(p, m, v);
         if (m % p != 0)
           throw UsageError("interleaved needs microbatches to be a multiple of stages, got " + std::to_string(m) +
                            " microbatches for " + std::to_string(p) + " stages");
       },
       interleaved_order},
      {"zb-h1", "1F1B with the backward split into input and weight gradients; weight passes fill idle slots", true,
       [](int p, int m, int v) { validate_one_f_one_b("zb-h1", p, m, v); }, zb_h1_order},
  };
  return kinds;
}

const ScheduleKind& find_schedule_kind(std::string_view name) {
  std::string known;
  for (const auto& k : schedule_kinds()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  throw UsageError("unknown pipeline schedule '" + std::string(name) + "'; accepted: " + known);
}

PipeSchedule make_schedule(std::string_view name, int stages, int microbatches, int chunks) {
  const ScheduleKind& kind = find_schedule_kind(name);
  kind.validate(stages, microbatches, chunks);
  PipeSchedule s{std::string(kind.name), stages, microbatches, chunks, kind.compute_order(stages, microbatches, chunks)};
  add_communication(s);
  return s;
}

void add_communication(PipeSchedule& s) {
  const int p = s.stages, last = s.virtual_stages() - 1;
  auto stage_of = [p](int vs) { return vs % p; };
  for (int stage = 0; stage < p; ++stage) {
    std::vector<PipeAction> out;
    for (const PipeAction& a : s.actions[stage]) {
      const int vs = s.virtual_stage(stage, a.chunk);
      const bool fwd = a.op == PipeOp::forward;
      const bool grad_in = a.op == PipeOp::backward || a.op == PipeOp::backward_input;
      if (fwd && vs > 0 && stage_of(vs - 1) != stage)
        out.push_back({PipeOp::recv_activation, a.microbatch, a.chunk, stage_of(vs - 1)});
      if (grad_in && vs < last && stage_of(vs + 1) != stage)
        out.push_back({PipeOp::recv_gradient, a.microbatch, a.chunk, stage_of(vs + 1)});
      out.push_back(a);
      if (fwd && vs < last && stage_of(vs + 1) != stage)
        out.push_back({PipeOp::send_activation, a.microbatch, a.chunk, stage_of(vs + 1)});
      if (grad_in && vs > 0 && stage_of(vs - 1) != stage)
        out.push_back({PipeOp::send_gradient, a.microbatch, a.chunk, stage_of(vs - 1)});
    }
    s.actions[stage] = std::move(out);
  }
}

}  // namespace parbench
