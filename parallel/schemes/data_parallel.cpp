// The data-parallel family's shared machinery.
#include "parallel/schemes/data_parallel.h"

#include "collectives/registry.h"
#include "base/error.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "profiles/range.h"

namespace parbench {

DataParallelScheme::DataParallelScheme(const TrainConfig& cfg, RankContext ctx)
    : cfg_(cfg),
      ctx_(ctx),
      model_(Model::create(cfg.model, ctx.alloc)),
      data_(cfg.model, cfg.seed),
      losses_(ctx.comm.device()) {
  dp_ = ctx.comm.size();
  accum_ = parbench::accumulation_steps(cfg, dp_);
}

void DataParallelScheme::run_microbatches(int step_index, UnitAccess& access, const std::function<void()>& before_last,
                                          bool local_objective) {
  const int micro = cfg_.global_batch / (dp_ * accum_), rank = ctx_.comm.rank();
  const float dloss = 1.0f / float(local_objective ? accum_ : accum_ * dp_);
  losses_.clear();
  for (int k = 0; k < accum_; ++k) {
    if (k == accum_ - 1 && before_last) before_last();
    PB_RANGE("microbatch", Category::compute, {.microbatch = k});
    Batch batch = data_.microbatch(step_index, k, dp_, rank, micro, ctx_.alloc, &ctx_.stream);
    TimelineSpan computing(ctx_.timeline, StreamTimeline::Lane::compute, ctx_.stream);
    auto acts = model_->forward(batch, access, dloss, ctx_.stream, nullptr);
    losses_.add(acts->losses, ctx_.stream);
    model_->backward(*acts, batch, access, ctx_.stream);
  }
}

double DataParallelScheme::loss() {
  const double local = losses_.mean();
  double out = local;
  if (dp_ > 1) ctx_.comm.allreduce(&local, &out, 1, DType::f64, ReduceOp::avg);
  return out;
}

std::vector<float> host_floats(const Tensor& t, const Stream& s) {
  s.synchronize();
  std::vector<char> raw(t.bytes());
  device_memcpy(Device{}, raw.data(), t.device(), t.data(), t.bytes());
  std::vector<float> out(std::size_t(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = float(load_as_double(raw.data(), t.dtype(), i));
  return out;
}

Tensor device_tensor(const std::vector<float>& values, DType t, TrackedAllocator& alloc, MemCategory category) {
  Tensor out(alloc, t, {std::int64_t(values.size())}, category);
  std::vector<char> raw(out.bytes());
  for (std::size_t i = 0; i < values.size(); ++i) store_from_double(raw.data(), t, i, values[i]);
  device_memcpy(out.device(), out.data(), Device{}, raw.data(), raw.size());
  return out;
}

Tensor DataParallelScheme::initial_full_params(MemCategory category) {
  return device_tensor(model_->initial_params(cfg_.seed), cfg_.model.dtype, ctx_.alloc, category);
}

const Algorithm* implementation_for(const Communicator& comm, const Algorithm* impl, Collective c) {
  if (impl && impl->unsupported(c, comm).empty()) return impl;
  return &choose_automatically(c, comm);  // ring, say, has no scatter: what auto would run
}

const Algorithm* DataParallelScheme::impl_for(Collective c) const {
  return implementation_for(ctx_.comm, cfg_.impl, c);
}

void DataParallelScheme::zero(Tensor& t) const {
  device_memset_async(t.device(), t.data(), 0, t.bytes(), ctx_.stream);
}

MemSplit zero_closed_form(const TrainConfig& cfg, std::int64_t psi, int n, int stage) {
  return zero_closed_form(cfg.model.dtype, cfg.optimizer, psi, n, stage);
}

}  // namespace parbench
