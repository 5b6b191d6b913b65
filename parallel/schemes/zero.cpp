// zero1, zero2, zero3 (= fsdp): ZeRO's three stages over the whole model (ZeroState, per-unit shards).
//  1: optimizer state sharded; full gradients reduce-scattered after backward; parameters all-gathered after the
//     update.
//  2: gradients sharded too: each unit's gradient is reduce-scattered as soon as backward finishes it (every
//     microbatch), then its full-size buffer is freed.
//  3: parameters sharded too: a unit is all-gathered before its forward and again before its backward, one unit
//     ahead (prefetch), and freed after use, so at most two gathered units are alive.
// --offload keeps the optimizer state in host memory and updates there (FSDP's cpu_offload), counting the
// gradient and parameter copies between device and host.
#include <numeric>

#include "parallel/schemes/data_parallel.h"
#include "parallel/schemes/zero_state.h"

namespace parbench {

namespace {

std::vector<int> all_units(const Model& m) {
  std::vector<int> u(std::size_t(m.units()));
  std::iota(u.begin(), u.end(), 0);
  return u;
}

class Zero : public DataParallelScheme {
 public:
  Zero(const TrainConfig& cfg, RankContext ctx, int stage)
      : DataParallelScheme(cfg, ctx),
        stage_(stage),
        // The full initial buffer is a temporary: stage 3 keeps only its shard.
        state_(cfg_, stage, model_->layout(), all_units(*model_), ctx.comm, ctx, comm_bytes_,
               initial_full_params(MemCategory::workspace)) {}

  void queue_step(int step_index) override {
    comm_bytes_ = {};
    run_microbatches(step_index, state_.begin_step(/*prefetch=*/true));
    state_.finish_step(step_index);
  }

  std::vector<float> full_params() override { return state_.packed_params(); }

  MemSplit estimated_state_bytes() const override {
    MemSplit m = zero_closed_form(cfg_, model_->layout().parameters, dp_, stage_);
    if (cfg_.offload) m[int(MemCategory::optimizer)] = 0;  // in host memory
    return m;
  }

 private:
  int stage_;
  ZeroState state_;
};

}  // namespace

std::unique_ptr<Scheme> make_zero(const TrainConfig& cfg, RankContext ctx) {
  return std::make_unique<Zero>(cfg, ctx, cfg.scheme->zero_stage);
}

}  // namespace parbench
