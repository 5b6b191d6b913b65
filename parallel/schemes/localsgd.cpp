// localsgd (federated averaging): each rank steps on its own samples with its own optimizer, and the parameters
// are averaged every --sync-every steps. With SGD and k = 1 it equals data-parallel SGD on the global batch.
#include "base/error.h"
#include "parallel/schemes/data_parallel.h"

namespace parbench {

namespace {

class LocalSgd : public DataParallelScheme {
 public:
  LocalSgd(const TrainConfig& cfg, RankContext ctx)
      : DataParallelScheme(cfg, ctx),
        params_(initial_full_params(MemCategory::parameters)),
        grads_(make(params_.numel(), MemCategory::gradients)),
        opt_(cfg_, ctx.alloc, params_, ctx.stream) {
    if (cfg.sync_every < 1) throw UsageError("--sync-every " + std::to_string(cfg.sync_every) + " must be >= 1");
  }

  void queue_step(int step_index) override {
    comm_bytes_ = {};
    zero(grads_);
    FlatAccess access(model_->layout(), params_, grads_);
    run_microbatches(step_index, access, {}, /*local_objective=*/true);
    opt_.step(params_, grads_, step_index, ctx_.stream);
    if ((step_index + 1) % cfg_.sync_every == 0) average();
  }

  std::vector<float> full_params() override {
    average();  // the model a user would keep: the ranks' average
    return to_host_floats(params_);
  }

  MemSplit estimated_state_bytes() const override {
    return zero_closed_form(cfg_, model_->layout().parameters, dp_, 0);
  }

 private:
  void average() {
    Communicator::StreamOrder on_compute(ctx_.comm, ctx_.stream.native());  // after the update, before what follows
    ctx_.comm.allreduce(params_.data(), params_.data(), std::size_t(params_.numel()), params_.dtype(), ReduceOp::avg,
                        impl_for(Collective::allreduce));
    comm_bytes_.allreduce(params_.bytes(), dp_);
  }

  Tensor params_, grads_;
  FlatOptimizer opt_;
};

}  // namespace

std::unique_ptr<Scheme> make_localsgd(const TrainConfig& cfg, RankContext ctx) {
  return std::make_unique<LocalSgd>(cfg, ctx);
}

}  // namespace parbench
