// single: one rank holds and updates everything; the reference every other scheme is compared with.
#include "base/error.h"
#include "parallel/schemes/data_parallel.h"

namespace parbench {

namespace {

class Single : public DataParallelScheme {
 public:
  Single(const TrainConfig& cfg, RankContext ctx)
      : DataParallelScheme(cfg, ctx),
        params_(initial_full_params(MemCategory::parameters)),
        grads_(make(params_.numel(), MemCategory::gradients)),
        opt_(cfg_, ctx.alloc, params_, ctx.stream) {
    if (ctx.comm.size() != 1)
      throw UsageError("scheme single runs on one rank, got " + std::to_string(ctx.comm.size()) +
                       "; use --ranks 1 or a data-parallel scheme");
  }

  void queue_step(int step_index) override {
    zero(grads_);
    FlatAccess access(model_->layout(), params_, grads_);
    run_microbatches(step_index, access);
    opt_.step(params_, grads_, step_index, ctx_.stream);
  }

  std::vector<float> full_params() override { return to_host_floats(params_); }
  MemSplit estimated_state_bytes() const override {
    return zero_closed_form(cfg_, model_->layout().parameters, 1, 0);
  }

 private:
  Tensor params_, grads_;
  FlatOptimizer opt_;
};

}  // namespace

std::unique_ptr<Scheme> make_single(const TrainConfig& cfg, RankContext ctx) {
  return std::make_unique<Single>(cfg, ctx);
}

}  // namespace parbench
