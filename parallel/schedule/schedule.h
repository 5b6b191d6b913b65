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
  std::string name;  // a registered schedule's name, or the CSV file it was read from
  int stages = 1;
  int microbatches = 1;
  int chunks = 1;  // model chunks per stage (interleaved: v)
  bool split_backward = false;  // backward_input + backward_weight instead of backward
  std::vector<std::vector<PipeAction>> actions;  // [stage] -> ordered actions
  int virtual_stages() const { return stages * chunks; }
  int virtual_stage(int stage, int chunk) const { return chunk * stages + stage; }
};

// A generator fills only the compute actions of each stage, in order.
using ComputeOrderFn = std::function<std::vector<std::vector<PipeAction>>(int stages, int microbatches, int chunks)>;

// Everything known about one schedule; each schedule's file defines its kind, and schedule.cpp lists them.
struct ScheduleKind {
  std::string_view name;
  std::string_view summary;  // one line for --help
  bool split_backward;       // uses backward_input + backward_weight instead of backward
  bool multi_chunk;          // runs more than one model chunk per stage (--virtual-stages > 1)
  // Throws UsageError for configurations the schedule does not support (the message names the values).
  std::function<void(int stages, int microbatches, int chunks)> validate;
  ComputeOrderFn compute_order;
  // The idle fraction of every stage with equal stage times and free communication (F = 1, B = 2, BI = W = 1),
  // in closed form (docs/metrics.md); the simulator must agree exactly.
  std::function<double(int stages, int microbatches, int chunks)> bubble;
};

// The registry: one line per schedule file.
const std::vector<ScheduleKind>& schedule_kinds();
const ScheduleKind& find_schedule_kind(std::string_view name);  // UsageError listing the known names
// "gpipe: all forwards, then all backwards" lines for --help, and the names alone.
std::string schedule_help();
std::string schedule_names();
// The multi-chunk schedules' names, "a or b", for messages about --virtual-stages.
std::string multi_chunk_schedule_names();

// A --schedule value resolved once: a registered schedule's entry, or a CSV file of compute actions (its path, read
// when the schedule is made). Empty: no pipeline.
struct ScheduleRef {
  const ScheduleKind* kind = nullptr;
  std::string file;  // when kind is null
  // A registered name, or a name ending in ".csv" (a file); UsageError listing the known names otherwise.
  static ScheduleRef parse(std::string_view name);
  std::string_view name() const { return kind ? kind->name : std::string_view(file); }
  bool empty() const { return !kind && file.empty(); }
  // More than one model chunk per stage is possible: a multi-chunk schedule, or a file (it has its own counts).
  bool multi_chunk() const { return kind ? kind->multi_chunk : !file.empty(); }
  bool operator==(const ScheduleRef&) const = default;
};

// Generates the schedule (compute order plus the sends and receives between stages); a file's compute actions (see
// read_schedule_csv) must have these dimensions. The name form resolves it first (ScheduleRef::parse).
PipeSchedule make_schedule(const ScheduleRef& schedule, int stages, int microbatches, int chunks = 1);
PipeSchedule make_schedule(std::string_view name, int stages, int microbatches, int chunks = 1);
// Throws UsageError when make_schedule would (a configuration the schedule does not support, a file that is
// unreadable, malformed or fails the checker).
void validate_schedule(const ScheduleRef& schedule, int stages, int microbatches, int chunks);

// Schedules as data: a CSV with the header "stage,op,microbatch,chunk" and one row per compute action (op F, B,
// BI or W) in each stage's order; stages, microbatches and chunks are the largest values plus one. The sends and
// receives are added (add_communication) and the whole list is checked (check_schedule); problems are UsageErrors
// naming the file and line. write_schedule_csv writes a schedule's compute actions in that form.
PipeSchedule read_schedule_csv(const std::string& path);
void write_schedule_csv(const PipeSchedule& s, const std::string& path);
bool is_schedule_file(std::string_view name);

// Inserts a receive before every compute action whose input comes from another stage, and a send after every
// compute action whose output goes to another stage.
void add_communication(PipeSchedule& s);

// Checks shared by the schedules' validate functions.
void validate_dimensions(int stages, int microbatches, int chunks);
void validate_single_chunk(std::string_view schedule, int chunks);
// 1F1B-shaped schedules: one chunk per stage and a full pipeline (m >= p) after the warm-up.
void validate_full_pipeline(std::string_view schedule, int stages, int microbatches, int chunks);

// 1F1B's order, which the interleaved and zero-bubble schedules build on.
std::vector<std::vector<PipeAction>> one_f_one_b_order(int stages, int microbatches, int chunks);

}  // namespace parbench
