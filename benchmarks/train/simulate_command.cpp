// bench_train --simulate: the options of a real run turned into predictor layouts, one predicted step per
// --gpus value, printed and written as rows of the training CSV (predicted = 1).
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "app/report.h"
#include "benchmarks/train/train_run.h"
#include "base/error.h"
#include "core/csv_columns.h"
#include "parallel/plan/partition.h"
#include "predict/costs.h"
#include "predict/predict.h"
#include "predict/system.h"

namespace parbench::train_bench {

using predict::Layout;
using predict::Prediction;

namespace {

// The scheme a run of this layout would use (ddp, zero1..3, hybrid), with what else distinguishes it, so that
// plots group predictions like runs and keep layouts that differ apart: "hybrid+zero1+sp+recompute-full".
std::string predicted_scheme_name(const Layout& l) {
  if (l.tp == 1 && l.pp == 1) return l.zero_stage > 0 ? "zero" + std::to_string(l.zero_stage) : "ddp";
  std::string name = "hybrid";
  if (l.zero_stage > 0) name += "+zero" + std::to_string(l.zero_stage);
  if (l.sequence_parallel) name += "+sp";
  if (l.recompute != predict::Recompute::none) name += "+recompute-" + predict::recompute_name(l.recompute);
  return name;
}

// "low-high" in ms with one decimal, as the step_ms column prints.
std::string range_text(const predict::StepRange& r) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f-%.1f", 1e3 * r.low, 1e3 * r.high);
  return text;
}

// --partition balanced or FILE: the blocks per virtual stage that a run of this layout would use, balanced on the
// predictor's own unit costs for the layout's GPUs.
void set_partition(Layout& l, PartitionRequest request, const predict::SystemModel& sys) {
  if (request.kind == PartitionRequest::Kind::uniform) return;
  if (l.pp < 2)
    throw UsageError("--partition " + request.name() + " spreads blocks over pipeline stages and needs --pp > 1");
  request.costs = predict::unit_costs(l, sys);
  l.stage_blocks = partition_blocks(request, l.model, l.pp * l.virtual_stages);
}

// The blocks of each virtual stage, the equal shares written out when no partition was given.
std::vector<int> blocks_per_stage(const Layout& l) {
  if (!l.stage_blocks.empty()) return l.stage_blocks;
  return std::vector<int>(std::size_t(l.pp * l.virtual_stages), l.model.layers / (l.pp * l.virtual_stages));
}

}  // namespace

UnitCosts predicted_unit_costs(const Options& o, const Device& dev) {
  Layout l;
  l.model = o.train.model;
  l.micro_batch = std::max(1, o.train.micro_batch);
  l.global_batch = l.micro_batch;
  return predict::unit_costs(l, predict::load_system(dev.kind == DeviceKind::cuda ? "dgx-h100" : "this-machine"));
}

Layout layout_for(const Options& o, int gpus, const predict::SystemModel& sys) {
  const TrainConfig& t = o.train;
  Layout l;
  l.model = t.model;
  l.gpus = gpus;
  l.tp = t.tp > 0 ? t.tp : 1;
  l.pp = t.pp > 0 ? t.pp : 1;
  if (t.dp > 0) l.dp = t.dp;
  else if (gpus % (l.tp * l.pp) != 0)
    throw UsageError("--gpus " + std::to_string(gpus) + " is not divisible by --tp " + std::to_string(l.tp) +
                     " x --pp " + std::to_string(l.pp) + "; dp defaults to gpus / (tp x pp)");
  else l.dp = gpus / (l.tp * l.pp);
  l.virtual_stages = t.virtual_stages;
  l.schedule = t.schedule;
  l.global_batch = t.global_batch;
  const int m = t.microbatches > 0 ? t.microbatches : l.pp;
  l.micro_batch = t.micro_batch > 0 ? t.micro_batch : std::max(1, t.global_batch / (l.dp * m));
  if (t.microbatches > 0 && l.microbatches() != t.microbatches)
    throw UsageError("--microbatches " + std::to_string(t.microbatches) + " disagrees with --global-batch " +
                     std::to_string(t.global_batch) + " / (dp " + std::to_string(l.dp) + " x --micro-batch " +
                     std::to_string(l.micro_batch) + ")");
  l.sequence_parallel = o.sp;
  l.zero_stage = o.zero;
  l.recompute = predict::parse_recompute(o.recompute);
  l.blocking_p2p = o.blocking_p2p;
  l.tp_backward_overlap = o.tp_backward_overlap || o.tp_userbuffers;
  l.tp_userbuffers = o.tp_userbuffers;
  l.dp_reduce_at_end = o.dp_reduce_at_end;
  l.zero2_fsdp = o.fsdp;
  l.dp_reduce = predict::parse_dp_reduce(o.dp_reduce);
  l.tied_embeddings = o.tied_embeddings;
  l.param_gather_overlap = o.param_gather_overlap;
  l.fused_cross_entropy = o.fused_cross_entropy;
  l.grad_accumulation = predict::parse_grad_accumulation(o.grad_accumulation);
  l.adamw = t.optimizer == OptimizerKind::adamw;
  l.pinned = o.pin;
  set_partition(l, t.partition, sys);
  predict::validate_layout(l);
  return l;
}

std::map<std::string, Cell> predicted_cells(const Layout& l, const Prediction& p,
                                            const predict::SystemModel& sys, const predict::StepRange* range) {
  const predict::TimeSplit& t = p.time;
  auto i64 = [](double v) { return Cell(std::int64_t(v)); };
  namespace col = csv::train;
  std::map<std::string, Cell> c = {
      {col::model, std::string(model_kind_name(l.model.kind))}, {col::scheme, predicted_scheme_name(l)},
      {col::schedule, l.pp > 1 ? Cell(std::string(l.schedule.name())) : Cell{}},
      {col::device, "predicted:" + sys.name},
      {col::impl, std::string("model")}, {col::ranks, std::int64_t(l.gpus)}, {col::tp, std::int64_t(l.tp)},
      {col::pp, std::int64_t(l.pp)}, {col::dp, std::int64_t(l.dp)},
      {col::microbatches, std::int64_t(l.microbatches())}, {col::global_batch, std::int64_t(l.global_batch)},
      {col::micro_batch, std::int64_t(l.micro_batch)}, {col::step_ms, 1e3 * t.step},
      {col::samples_per_s, l.global_batch / t.step}, {col::tokens_per_s, p.tokens_per_s},
      {col::tflops_per_rank, p.tflops_per_gpu}, {col::mfu, p.mfu},
      {col::bubble_theory, l.pp > 1 ? Cell(p.bubble_theory) : Cell{}},
      {col::bubble_replayed, l.pp > 1 ? Cell(p.bubble_simulated) : Cell{}}, {col::peak_bytes, i64(p.peak_bytes)},
      {col::estimate_bytes, i64(p.state_bytes)}, {col::predicted, std::int64_t(1)},
      {col::forward_ms, 1e3 * t.forward}, {col::backward_ms, 1e3 * t.backward},
      {col::recompute_ms, 1e3 * t.recompute}, {col::optimizer_ms, 1e3 * t.optimizer},
      {col::bubble_ms, 1e3 * t.bubble}, {col::tp_comm_ms, 1e3 * t.tp_comm}, {col::pp_comm_ms, 1e3 * t.pp_comm},
      {col::dp_comm_ms, 1e3 * t.dp_comm}, {col::recompute, predict::recompute_name(l.recompute)},
      {col::sp, std::int64_t(l.sequence_parallel)}, {col::zero, std::int64_t(l.zero_stage)},
      {col::virtual_stages, std::int64_t(l.virtual_stages)},
      {col::partition, l.pp > 1 ? Cell(partition_text(blocks_per_stage(l))) : Cell{}}};
  for (int k = 0; k < kMemCategories; ++k)
    c[memory_column(MemCategory(k))] = i64(double(p.memory[std::size_t(k)]));
  if (range) c[col::step_ms_low] = 1e3 * range->low, c[col::step_ms_high] = 1e3 * range->high;
  return c;
}

int simulate(const Options& o) {
  const predict::SystemModel sys = predict::load_system(o.system);
  struct Row {
    Layout l;
    Prediction p;
    predict::StepRange range;
  };
  std::vector<Row> rows;
  for (int gpus : parse_gpu_list(o.gpus)) {  // every layout is checked before anything is printed or written
    const Layout l = layout_for(o, gpus, sys);
    rows.push_back({l, predict::predict_step(l, sys), predict::predict_step_range(l, sys)});
  }
  Table csv(train_csv_columns());
  Table text({{"gpus"}, {"dp.tp.pp"}, {"v"}, {"partition"}, {"schedule"}, {"mbs"}, {"zero"}, {"recompute"}, {"step_ms", 1},
              {"range_ms"}, {"tokens/s", 0}, {"TFLOP/s/GPU", 1}, {"MFU", 3}, {"fwd", 1}, {"bwd", 1}, {"recomp", 1}, {"opt", 1},
              {"bubble", 1}, {"tp", 1}, {"pp", 1}, {"dp", 1}, {"peak_GiB", 2}, {"fits"}});
  for (const auto& [l, p, range] : rows) {
    csv.add_row(row_by_name(csv.columns(), predicted_cells(l, p, sys, &range)));
    const predict::TimeSplit& t = p.time;
    text.add_row({std::int64_t(l.gpus),
                  std::to_string(l.dp) + "." + std::to_string(l.tp) + "." + std::to_string(l.pp),
                  std::int64_t(l.virtual_stages),
                  l.pp > 1 ? partition_text(blocks_per_stage(l)) : std::string("-"), l.pp > 1 ? std::string(l.schedule.name()) : std::string("-"),
                  std::int64_t(l.micro_batch), std::int64_t(l.zero_stage), predict::recompute_name(l.recompute),
                  1e3 * t.step, range_text(range), p.tokens_per_s, p.tflops_per_gpu, p.mfu, 1e3 * t.forward, 1e3 * t.backward,
                  1e3 * t.recompute, 1e3 * t.optimizer, 1e3 * t.bubble, 1e3 * t.tp_comm, 1e3 * t.pp_comm,
                  1e3 * t.dp_comm, p.peak_bytes / (1024.0 * 1024 * 1024), std::string(p.fits ? "yes" : "NO")});
  }
  if (!o.common.quiet) {
    std::cout << "# predicted on " << sys.name << " (" << sys.gpu.name << "); times in ms per step; range_ms: the step "
                 "at the fast and slow ends of the system's measured efficiency spreads\n";
    text.write_text(std::cout);
  }
  if (!o.common.csv.empty()) csv.write_csv(o.common.csv, /*append=*/true);
  if (!o.common.json.empty()) csv.write_json(o.common.json);
  return 0;
}

}  // namespace parbench::train_bench
