// dp: the classic single-parameter-server DataParallel. Rank 0 owns the master parameters and the optimizer;
// every step it broadcasts the parameters, scatters the inputs of the global batch, and receives the gradients
// reduced to it, then updates alone. Rank 0's extra memory (optimizer state, the whole batch) and traffic show
// in the results.
#include <optional>

#include "core/memory.h"
#include "parallel/schemes/data_parallel.h"

namespace parbench {

namespace {

class ParameterServer : public DataParallelScheme {
 public:
  ParameterServer(const TrainConfig& cfg, RankContext ctx)
      : DataParallelScheme(cfg, ctx),
        params_(initial_full_params(MemCategory::parameters)),
        grads_(make(params_.numel(), MemCategory::gradients)) {
    if (root()) opt_.emplace(cfg_, ctx.alloc, params_, ctx.stream);
  }

  void queue_step(int step_index) override {
    Communicator::StreamOrder on_compute(ctx_.comm, ctx_.stream.native());  // the server's traffic is on the path
    comm_bytes_ = {};
    const std::uint64_t n = std::uint64_t(dp_), pbytes = params_.bytes();
    ctx_.comm.broadcast(params_.data(), params_.data(), std::size_t(params_.numel()), params_.dtype(), 0,
                         impl_for(Collective::broadcast));
    // The root sends the model to each of the n-1 others; they each receive it once.
    comm_bytes_.bytes += root() ? pbytes * (n - 1) : pbytes;
    zero(grads_);
    FlatAccess access(model_->layout(), params_, grads_);
    run_microbatches_scattered(step_index, access);
    ctx_.comm.reduce(grads_.data(), grads_.data(), std::size_t(grads_.numel()), grads_.dtype(), ReduceOp::sum, 0,
                     impl_for(Collective::reduce));
    comm_bytes_.bytes += root() ? pbytes * (n - 1) : pbytes;
    if (root()) opt_->step(params_, grads_, step_index, ctx_.stream);
  }

  std::vector<float> full_params() override {
    Communicator::StreamOrder on_compute(ctx_.comm, ctx_.stream.native());
    ctx_.comm.broadcast(params_.data(), params_.data(), std::size_t(params_.numel()), params_.dtype(), 0,
                         impl_for(Collective::broadcast));
    return to_host_floats(params_);
  }

  MemSplit estimated_state_bytes() const override {
    MemSplit m = zero_closed_form(cfg_, model_->layout().parameters, 1, 0);
    if (!root()) m[int(MemCategory::optimizer)] = 0;
    return m;
  }

 private:
  bool root() const { return ctx_.comm.rank() == 0; }

  // Like run_microbatches, but rank 0 makes every rank's inputs and scatters them.
  void run_microbatches_scattered(int step_index, UnitAccess& access) {
    const int micro = cfg_.global_batch / (dp_ * accum_), rank = ctx_.comm.rank();
    const float dloss = 1.0f / float(accum_ * dp_);
    losses_.clear();
    for (int k = 0; k < accum_; ++k) {
      Batch mine = data_.microbatch(step_index, k, dp_, rank, micro, ctx_.alloc, &ctx_.stream);
      std::optional<Batch> all;
      if (root())
        all = data_.batch(step_index, std::int64_t(k * dp_) * micro, std::int64_t(dp_) * micro, ctx_.alloc,
                          &ctx_.stream);
      for (auto [src, dst] : {std::pair{root() ? &all->inputs : nullptr, &mine.inputs},
                              std::pair{root() ? &all->targets : nullptr, &mine.targets}}) {
        ctx_.comm.scatter(src ? src->data() : nullptr, dst->data(), std::size_t(dst->numel()), dst->dtype(), 0,
                          impl_for(Collective::scatter));
        comm_bytes_.bytes += root() ? dst->bytes() * std::uint64_t(dp_ - 1) : dst->bytes();
      }
      auto acts = model_->forward(mine, access, dloss, ctx_.stream, nullptr);
      losses_.add(acts->losses, ctx_.stream);
      model_->backward(*acts, mine, access, ctx_.stream);
    }
  }

  Tensor params_, grads_;
  std::optional<FlatOptimizer> opt_;
};

}  // namespace

std::unique_ptr<Scheme> make_dp(const TrainConfig& cfg, RankContext ctx) {
  return std::make_unique<ParameterServer>(cfg, ctx);
}

}  // namespace parbench
