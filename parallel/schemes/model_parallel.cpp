// The model-parallel family on one grid of dp x tp x pp ranks:
//   tp      tensor parallel over all ranks (Megatron column/row splits inside the model), sp the same with
//           sequence parallelism;
//   mp      naive model parallelism: contiguous stages, the whole batch passed along, no microbatches;
//   pp      pipeline parallelism with a schedule (gpipe, 1f1b, interleaved, zb-h1) over --microbatches;
//   hybrid  --dp a --tp b --pp c, with ddp or zero1..3 (--dp-scheme) across the data-parallel groups (ZeroState
//           over the stage's units: zero2 reduce-scatters each microbatch's gradients as its backward ends, zero3
//           gathers a unit at each use, so both move more data per step in a pipeline).
// Rank layout: ParallelGrid (parallel/plan/plan.h), Megatron's order.
// Virtual stage k (of pp * v) holds layers [k L/(pp v), (k+1) L/(pp v)); the embedding goes with the first, the
// head with the last; virtual stage k runs on pipeline rank k % pp as its chunk k / pp.
#include <algorithm>
#include <map>
#include <optional>

#include "base/error.h"
#include "models/data.h"
#include "models/model.h"
#include "models/tensor_parallel.h"
#include "parallel/pipeline_executor.h"
#include "parallel/pipeline_stream_order.h"
#include "parallel/schedule/schedule.h"
#include "parallel/schemes/data_parallel.h"
#include "parallel/schemes/model_parallel.h"
#include "parallel/schemes/zero_state.h"

namespace parbench {

ModelParallelPlan plan_model_parallel(const TrainConfig& cfg, int ranks) {
  ModelParallelPlan p;
  const SchemeKind& kind = *cfg.scheme;
  auto derive = [&](int given, int fallback) { return given > 0 ? given : fallback; };
  ParallelShape& sh = p.shape;
  sh.tp = derive(cfg.tp, kind.spread == SchemeKind::Spread::tensor ? ranks : 1);
  sh.pp = derive(cfg.pp, kind.spread == SchemeKind::Spread::pipeline ? ranks : 1);
  for (auto [name, v] : {std::pair{"--tp", cfg.tp}, {"--pp", cfg.pp}, {"--dp", cfg.dp}})
    if (v < 0) throw UsageError(std::string(name) + " " + std::to_string(v) + " must be >= 1 (or 0: derived)");
  sh.dp = derive(cfg.dp, std::max(1, ranks / (sh.tp * sh.pp)));
  if (sh.dp * sh.tp * sh.pp != ranks)
    throw UsageError("--dp " + std::to_string(sh.dp) + " x --tp " + std::to_string(sh.tp) + " x --pp " +
                     std::to_string(sh.pp) + " = " + std::to_string(sh.dp * sh.tp * sh.pp) + " ranks, but " +
                     std::to_string(ranks) + " ranks run; choose degrees whose product is the rank count");
  p.sequence_parallel = kind.sequence_parallel;
  if (kind.whole_batch) {
    if (cfg.microbatches > 1)
      throw UsageError("scheme mp passes the whole batch from stage to stage, without microbatches; got "
                       "--microbatches " + std::to_string(cfg.microbatches) + ", use --scheme pp for a pipeline");
    sh.schedule = ScheduleRef::parse("gpipe"), sh.microbatches = 1, sh.virtual_stages = 1;
  } else {
    sh.schedule = sh.pp > 1 || kind.spread == SchemeKind::Spread::pipeline ? cfg.schedule : ScheduleRef{};
    sh.virtual_stages = cfg.virtual_stages;
    // A schedule file may hold any number of chunks per stage; its own dimensions are checked against the run's.
    if (cfg.virtual_stages > 1 && !sh.schedule.multi_chunk())
      throw UsageError("--virtual-stages " + std::to_string(cfg.virtual_stages) + " needs --schedule " +
                       multi_chunk_schedule_names() + ", got '" + std::string(sh.schedule.name()) + "'");
    if (cfg.microbatches > 0) sh.microbatches = cfg.microbatches;
    else if (cfg.micro_batch > 0) sh.microbatches = std::max(1, cfg.global_batch / (sh.dp * cfg.micro_batch));
    else sh.microbatches = sh.schedule.empty() ? 1 : sh.pp;
  }
  if (cfg.global_batch < 1 || cfg.global_batch % (sh.dp * sh.microbatches) != 0)
    throw UsageError("global batch " + std::to_string(cfg.global_batch) + " is not divisible by " +
                     std::to_string(sh.dp) + " data-parallel groups x " + std::to_string(sh.microbatches) +
                     " microbatches; choose --global-batch = dp x microbatches x micro-batch");
  if (cfg.micro_batch > 0 && cfg.micro_batch * sh.dp * sh.microbatches != cfg.global_batch)
    throw UsageError("--micro-batch " + std::to_string(cfg.micro_batch) + " x " + std::to_string(sh.dp) +
                     " data-parallel groups x " + std::to_string(sh.microbatches) +
                     " microbatches is not --global-batch " +
                     std::to_string(cfg.global_batch));
  const int vstages = sh.pp * sh.virtual_stages;
  if (cfg.partition.kind == PartitionRequest::Kind::uniform && cfg.model.layers % vstages != 0)
    throw UsageError("--layers " + std::to_string(cfg.model.layers) + " is not divisible by --pp " +
                     std::to_string(sh.pp) + " x --virtual-stages " + std::to_string(sh.virtual_stages) +
                     "; every virtual stage holds the same number of layers (--partition uniform; balanced or a "
                     "FILE of counts spread them unequally)");
  sh.stage_blocks = partition_blocks(cfg.partition, cfg.model, vstages);
  if (!sh.schedule.empty())  // the schedule's own rules: m >= p for 1f1b, m a multiple of p for interleaved, ...
    validate_schedule(sh.schedule, sh.pp, sh.microbatches, sh.virtual_stages);
  p.zero_stage = cfg.dp_scheme->zero_stage;
  if (cfg.offload)
    throw UsageError("--offload applies to zero1, zero2 and zero3, not to scheme '" + std::string(kind.name) + "'");
  p.model = cfg.model;
  p.model.tp = sh.tp;
  p.model.sequence_parallel = p.sequence_parallel;
  p.model.validate();
  return p;
}

namespace {

class ModelParallel : public Scheme {
 public:
  ModelParallel(const TrainConfig& cfg, RankContext ctx)
      : cfg_(cfg),
        ctx_(ctx),
        plan_(plan_model_parallel(cfg, ctx.comm.size())),
        grid_(ParallelGrid::of(ctx.comm.rank(), plan_.shape.dp, plan_.shape.tp, plan_.shape.pp)),
        // split is collective over the world: every rank makes the three calls in the same order.
        tp_comm_(ctx.comm.split(grid_.pp_rank * grid_.dp + grid_.dp_rank, grid_.tp_rank)),
        dp_comm_(ctx.comm.split(grid_.pp_rank * grid_.tp + grid_.tp_rank, grid_.dp_rank)),
        pp_comm_(ctx.comm.split(grid_.dp_rank * grid_.tp + grid_.tp_rank, grid_.pp_rank)),
        data_(cfg.model, cfg.seed),
        action_times_(ctx.comm.device()),
        losses_(ctx.comm.device()) {
    const ParallelShape& sh = plan_.shape;
    dp_ = sh.dp;
    accum_ = sh.microbatches;
    micro_ = cfg.global_batch / (sh.dp * sh.microbatches);
    tp_comm_.set_implementation(cfg.impl);
    tp_.comm = &tp_comm_;
    model_ = Model::create(plan_.model, ctx.alloc, &tp_);
    if (!sh.schedule.empty()) schedule_ = make_schedule(sh.schedule, sh.pp, sh.microbatches, sh.virtual_stages);
    else schedule_ = make_schedule("gpipe", 1, sh.microbatches, 1);
    // NCCL between the stages when every stage can issue its exchanges in an order NCCL matches, as the schedule
    // places them or moved to where a replay has its messages (the same on all ranks: the schedule and the group's
    // NCCL are); else the host transports, matched by tag.
    // Its own stream: the data-parallel collectives on the communication stream belong to another communicator,
    // and one stream would make each group wait for the other's peers.
    std::optional<PipeSchedule> ordered;
    if (!ctx.comm.device().on_host() && pp_comm_.nccl_comm()) ordered = stream_ordered_schedule(schedule_);
    if (ordered) {
      schedule_ = std::move(*ordered);
      pipe_stream_.emplace(ctx.comm.device(), /*create=*/true);
      stream_path_.emplace(*pipe_stream_);
    }
    for (int c = 0; c < sh.virtual_stages; ++c)
      chunk_units_.push_back(partition_units(cfg.model, c * sh.pp + grid_.pp_rank, sh.stage_blocks));
    // This rank's units, packed in one buffer (a stage holds only its own layers), replicated or ZeRO-sharded
    // over the data-parallel group.
    for (const UnitRange& r : chunk_units_)
      for (int u = r.first; u < r.last; ++u) {
        offset_[u] = local_numel_;
        local_numel_ += model_->layout().units[std::size_t(u)].numel;
        units_.push_back(u);
      }
    state_.emplace(cfg_, plan_.zero_stage, model_->layout(), units_, dp_comm_, ctx, comm_bytes_,
                   initial_params());
  }

  void queue_step(int step_index) override {
    comm_bytes_ = {};
    tp_.bytes = 0;
    // Gathering one unit ahead (ZeRO-3) follows the whole model's pass order: only without a pipeline.
    UnitAccess& access = state_->begin_step(/*prefetch=*/plan_.shape.pp == 1);
    PipelineStage stage{*model_, access, pp_comm_, ctx_.stream, ctx_.alloc, schedule_, chunk_units_,
                        [&](int mb) {
                          return data_.microbatch(step_index, mb, grid_.dp, grid_.dp_rank, micro_, ctx_.alloc,
                                                  &ctx_.stream);
                        },
                        1.0f / float(plan_.shape.microbatches * plan_.shape.dp), ctx_.comm.rank()};
    stage.action_times = &action_times_;
    stage.losses = &losses_;
    stage.stream_path = stream_path_ ? &*stream_path_ : nullptr;
    losses_.clear();
    // The stages start together: on the host transports by a barrier; on the stream path each stage's actions are
    // timed from an event on its stream, and the step began after the world's barrier (a host barrier here would be
    // a host wait inside the step, an NCCL one under mpirun).
    if (!stream_path_) pp_comm_.barrier();
    PipelineStepResult r = run_pipeline_stage(stage);
    peak_in_flight_ = r.peak_in_flight;
    timing_.reset();
    comm_bytes_.bytes += r.sent_bytes + tp_.bytes;
    state_->finish_step(step_index);
    // The loss: the last virtual stage's microbatch losses, once per data-parallel group.
    const bool reports = grid_.pp_rank == (schedule_.virtual_stages() - 1) % plan_.shape.pp && grid_.tp_rank == 0;
    reports_loss_ = reports;
  }

  // The mean over this pipeline's microbatches, once per data-parallel group, summed over the groups.
  double loss() override {
    double loss = reports_loss_ ? losses_.mean() / plan_.shape.dp : 0;
    ctx_.comm.allreduce(&loss, &loss, 1, DType::f64, ReduceOp::sum);
    return loss;
  }

  std::vector<float> full_params() override {
    const ParamLayout full = make_layout(plan_.model.unsplit());
    std::vector<float> out(std::size_t(full.total), 0.0f);
    const std::vector<float> mine = state_->packed_params();  // collective over the group at ZeRO-3
    if (grid_.dp_rank == 0) {
      for (const auto& [u, off] : offset_) {
        const TpIndex idx = tp_index(plan_.model, grid_.tp_rank, u);
        for (std::size_t i = 0; i < idx.full.size(); ++i)
          if (idx.full[i] >= 0 && (!idx.replicated[i] || grid_.tp_rank == 0))
            out[std::size_t(full.units[std::size_t(u)].offset + idx.full[i])] = mine[std::size_t(off) + i];
      }
    }
    // Every element is written by exactly one rank: the sum is the assembly.
    ctx_.comm.allreduce(out.data(), out.data(), out.size(), DType::f32, ReduceOp::sum);
    return out;
  }

  const CommCounter& last_step_comm() const override { return comm_bytes_; }
  MemSplit estimated_state_bytes() const override {
    return zero_closed_form(cfg_, local_numel_, plan_.shape.dp, plan_.zero_stage);
  }
  ParallelShape shape() const override { return plan_.shape; }
  const PipelineTiming* last_step_pipeline() const override {
    if (plan_.shape.schedule.empty()) return nullptr;
    if (!timing_) timing_ = pipeline_timing(action_times_, peak_in_flight_);  // the step's work is done by now
    return &*timing_;
  }

 private:
  // This rank's units of the model's seeded parameters (the single-rank model's values, cut to this tensor-parallel
  // rank by Model::initial_params), packed.
  Tensor initial_params() const {
    const std::vector<float> init = model_->initial_params(cfg_.seed);
    std::vector<float> packed(static_cast<std::size_t>(local_numel_));
    for (const auto& [u, off] : offset_) {
      const UnitLayout& unit = model_->layout().units[std::size_t(u)];
      std::copy_n(init.begin() + unit.offset, unit.numel, packed.begin() + off);
    }
    return device_tensor(packed, cfg_.model.dtype, ctx_.alloc, MemCategory::workspace);
  }

  TrainConfig cfg_;
  RankContext ctx_;
  ModelParallelPlan plan_;
  ParallelGrid grid_;
  Communicator tp_comm_, dp_comm_, pp_comm_;
  TensorParallel tp_;
  SyntheticData data_;
  std::unique_ptr<Model> model_;
  PipeSchedule schedule_;
  std::vector<UnitRange> chunk_units_;
  std::map<int, std::int64_t> offset_;  // unit -> offset in this rank's packed buffers
  std::vector<int> units_;              // this rank's units, ascending
  std::int64_t local_numel_ = 0;
  std::int64_t micro_ = 1;
  CommCounter comm_bytes_;  // before state_, which counts into it
  std::optional<ZeroState> state_;
  StreamTimeline action_times_;
  LossTally losses_;
  int peak_in_flight_ = 0;
  bool reports_loss_ = false;
  mutable std::optional<PipelineTiming> timing_;  // resolved from action_times_ when first asked
  std::optional<Stream> pipe_stream_;
  std::optional<PipelineStreamPath> stream_path_;  // NCCL sends and receives on pipe_stream_
};

}  // namespace

std::unique_ptr<Scheme> make_model_parallel(const TrainConfig& cfg, RankContext ctx) {
  return std::make_unique<ModelParallel>(cfg, ctx);
}

}  // namespace parbench
