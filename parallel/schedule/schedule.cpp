// Schedule registry, generation and insertion of the stage-to-stage sends and receives.
#include "parallel/schedule/schedule.h"

#include "base/error.h"
#include "base/text.h"

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

void validate_dimensions(int p, int m, int v) {
  if (p < 1) throw UsageError("pipeline stages " + std::to_string(p) + " must be >= 1");
  if (m < 1) throw UsageError("microbatches " + std::to_string(m) + " must be >= 1");
  if (v < 1) throw UsageError("virtual stages per rank " + std::to_string(v) + " must be >= 1");
}

void validate_single_chunk(std::string_view name, int v) {
  if (v != 1)
    throw UsageError(std::string(name) + " has one model chunk per stage, got --virtual-stages " +
                     std::to_string(v) + "; use the " + multi_chunk_schedule_names() +
                     " schedule for v > 1");
}

void validate_full_pipeline(std::string_view name, int p, int m, int v) {
  validate_dimensions(p, m, v), validate_single_chunk(name, v);
  if (m < p)
    throw UsageError(std::string(name) + " needs microbatches >= stages, got " + std::to_string(m) +
                     " microbatches for " + std::to_string(p) + " stages; use gpipe or more microbatches");
}

// Each schedule's file defines its kind.
ScheduleKind gpipe_schedule();
ScheduleKind one_f_one_b_schedule();
ScheduleKind interleaved_schedule();
ScheduleKind zb_h1_schedule();

const std::vector<ScheduleKind>& schedule_kinds() {
  static const std::vector<ScheduleKind> kinds = {gpipe_schedule(), one_f_one_b_schedule(), interleaved_schedule(),
                                                  zb_h1_schedule()};
  return kinds;
}

std::string schedule_names() {
  return join(schedule_kinds(), ", ", &ScheduleKind::name);
}

std::string multi_chunk_schedule_names() {
  std::vector<std::string_view> names;
  for (const ScheduleKind& k : schedule_kinds())
    if (k.multi_chunk) names.push_back(k.name);
  return join(names, " or ");
}

std::string schedule_help() {
  std::string help;
  for (const auto& k : schedule_kinds()) help += "\n  " + std::string(k.name) + ": " + std::string(k.summary);
  return help + "\n  FILE.csv: compute actions per stage (stage,op,microbatch,chunk)";
}

const ScheduleKind& find_schedule_kind(std::string_view name) {
  for (const auto& k : schedule_kinds())
    if (k.name == name) return k;
  throw UsageError("unknown pipeline schedule '" + std::string(name) + "'; accepted: " + schedule_names() +
                   ", or a FILE.csv of compute actions");
}

bool is_schedule_file(std::string_view name) { return name.size() > 4 && name.substr(name.size() - 4) == ".csv"; }

ScheduleRef ScheduleRef::parse(std::string_view name) {
  if (is_schedule_file(name)) return {nullptr, std::string(name)};
  return {&find_schedule_kind(name), {}};
}

PipeSchedule make_schedule(std::string_view name, int stages, int microbatches, int chunks) {
  return make_schedule(ScheduleRef::parse(name), stages, microbatches, chunks);
}

PipeSchedule make_schedule(const ScheduleRef& schedule, int stages, int microbatches, int chunks) {
  PB_CHECK(!schedule.empty(), "make_schedule without a schedule");
  if (!schedule.kind) {
    PipeSchedule s = read_schedule_csv(schedule.file);
    if (s.stages != stages || s.microbatches != microbatches || s.chunks != chunks)
      throw UsageError("schedule file " + schedule.file + " has " + std::to_string(s.stages) + " stages, " +
                       std::to_string(s.microbatches) + " microbatches and " + std::to_string(s.chunks) +
                       " chunks per stage, but the run has --pp " + std::to_string(stages) + ", " +
                       std::to_string(microbatches) + " microbatches and --virtual-stages " + std::to_string(chunks));
    return s;
  }
  const ScheduleKind& kind = *schedule.kind;
  kind.validate(stages, microbatches, chunks);
  PipeSchedule s{std::string(kind.name), stages, microbatches, chunks, kind.split_backward,
                 kind.compute_order(stages, microbatches, chunks)};
  add_communication(s);
  return s;
}

void validate_schedule(const ScheduleRef& schedule, int stages, int microbatches, int chunks) {
  if (schedule.kind) schedule.kind->validate(stages, microbatches, chunks);
  else make_schedule(schedule, stages, microbatches, chunks);
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
