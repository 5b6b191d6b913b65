// Pipeline schedules as data: for every stage, the ordered list of actions (compute and communication) per
// microbatch and model chunk. Generators make the lists, one checker verifies them, one simulator times them,
// and one executor (parallel/) runs any of them.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace parbench {

enum class PipeOp {
  forward,
  backward,         // input and weight gradients together
  backward_input,   // input gradient only (zero-bubble schedules): on the critical path
  backward_weight,  // weight gradient only: deferrable
  send_activation,
  recv_activation,
  send_gradient,
  recv_gradient,
};
std::string_view pipe_op_name(PipeOp op);  // "F", "B", "BI", "W", "send_act", ...
bool is_compute(PipeOp op);

struct PipeAction {
  PipeOp op;
  int microbatch;
  int chunk;      // local model chunk on this stage, 0..v-1; its virtual stage is chunk * stages + stage
  int peer = -1;  // the other stage of a send/receive
  bool operator==(const PipeAction&) const = default;
};

struct PipeSchedule {
  std::string name;
  int stages = 1;
  int microbatches = 1;
  int chunks = 1;  // model chunks per stage (interleaved: v)
  std::vector<std::vector<PipeAction>> actions;  // [stage] -> ordered actions
  int virtual_stages() const { return stages * chunks; }
  int virtual_stage(int stage, int chunk) const { return chunk * stages + stage; }
};

// A generator fills only the compute actions of each stage, in order.
using ComputeOrderFn = std::function<std::vector<std::vector<PipeAction>>(int stages, int microbatches, int chunks)>;

struct ScheduleKind {
  std::string_view name;
  std::string_view summary;
  bool split_backward;  // uses backward_input + backward_weight instead of backward
  // Throws UsageError for configurations the schedule does not support (the message names the values).
  std::function<void(int stages, int microbatches, int chunks)> validate;
  ComputeOrderFn compute_order;
};

// The registry: one entry per schedule file.
const std::vector<ScheduleKind>& schedule_kinds();
const ScheduleKind& find_schedule_kind(std::string_view name);  // UsageError listing the known names

// Generates the named schedule (compute order plus the sends and receives between stages).
PipeSchedule make_schedule(std::string_view name, int stages, int microbatches, int chunks = 1);

// Inserts a receive before every compute action whose input comes from another stage, and a send after every
// compute action whose output goes to another stage.
void add_communication(PipeSchedule& s);

// Each generator lives in its own file.
std::vector<std::vector<PipeAction>> gpipe_order(int stages, int microbatches, int chunks);
std::vector<std::vector<PipeAction>> one_f_one_b_order(int stages, int microbatches, int chunks);
std::vector<std::vector<PipeAction>> interleaved_order(int stages, int microbatches, int chunks);
std::vector<std::vector<PipeAction>> zb_h1_order(int stages, int microbatches, int chunks);

}  // namespace parbench
