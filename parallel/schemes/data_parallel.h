// What the data-parallel family shares: the model and data on this rank, the microbatch loop with the loss
// weighting of gradient accumulation, and the loss average (ZeRO's sharding is in zero_state.h).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "models/data.h"
#include "models/model.h"
#include "parallel/loss_tally.h"
#include "parallel/optimizer.h"
#include "parallel/train.h"

namespace parbench {

// fp32 copy of a model-dtype tensor, on the host, once the stream has written it.
std::vector<float> host_floats(const Tensor& t, const Stream& s);
// Its inverse: a tensor of `values` in dtype `t` on `alloc`'s device.
Tensor device_tensor(const std::vector<float>& values, DType t, TrackedAllocator& alloc, MemCategory category);

class DataParallelScheme : public Scheme {
 public:
  DataParallelScheme(const TrainConfig& cfg, RankContext ctx);
  const CommCounter& last_step_comm() const override { return comm_bytes_; }

 protected:
  // Queues this rank's microbatches through `access`, their losses into losses_; calls `before_last` before the
  // last microbatch (DDP's no_sync ends there).
  // `local_objective`: each rank minimises its own samples' mean (local SGD) instead of its share of the global mean.
  void run_microbatches(int step_index, UnitAccess& access, const std::function<void()>& before_last = {},
                        bool local_objective = false);
  // The global mean of the ranks' losses of the last step (a tiny allreduce not counted as training traffic).
  double loss() override;
  std::vector<float> to_host_floats(const Tensor& t) const { return host_floats(t, ctx_.stream); }
  // Initial parameters (model dtype) of the whole model, on this rank's device.
  Tensor initial_full_params(MemCategory category);
  // Model-dtype tensor of n elements.
  Tensor make(std::int64_t n, MemCategory c) { return Tensor(ctx_.alloc, cfg_.model.dtype, {n}, c); }
  void zero(Tensor& t) const;
  // --impl for collective `c`, or the first hand-written algorithm that can run it when --impl cannot (ring has
  // no scatter, for example); the same answer on every rank.
  const Algorithm* impl_for(Collective c) const;

  TrainConfig cfg_;
  RankContext ctx_;
  std::unique_ptr<Model> model_;
  SyntheticData data_;
  LossTally losses_;  // this step's microbatch losses, read by loss()
  CommCounter comm_bytes_;
};

// `impl` for collective `c` on `comm`, or what "auto" would choose when `impl` cannot run it (ring has no scatter,
// for example); the same answer on every rank.
const Algorithm* implementation_for(const Communicator& comm, const Algorithm* impl, Collective c);

// The closed forms (parallel/plan/plan.h) for the run's dtype and optimizer.
MemSplit zero_closed_form(const TrainConfig& cfg, std::int64_t psi, int n, int stage);

std::unique_ptr<Scheme> make_single(const TrainConfig& cfg, RankContext ctx);
std::unique_ptr<Scheme> make_dp(const TrainConfig& cfg, RankContext ctx);
std::unique_ptr<Scheme> make_ddp(const TrainConfig& cfg, RankContext ctx);
std::unique_ptr<Scheme> make_zero(const TrainConfig& cfg, RankContext ctx);  // stage: the scheme's
std::unique_ptr<Scheme> make_localsgd(const TrainConfig& cfg, RankContext ctx);
std::unique_ptr<Scheme> make_model_parallel(const TrainConfig& cfg, RankContext ctx);

}  // namespace parbench
