// The data-parallel family's shared machinery.
#include "parallel/schemes/data_parallel.h"

#include "core/error.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "profiles/range.h"

namespace parbench {

ShardLayout::ShardLayout(const ParamLayout& layout, int n) : ranks(n) {
  const std::int64_t quantum = std::int64_t(n) * kParamAlign;
  for (const UnitLayout& u : layout.units) {
    const std::int64_t padded = (u.numel + quantum - 1) / quantum * quantum;
    units.push_back({u.offset, u.numel, padded / n, shard_numel});
    shard_numel += padded / n;
  }
}

DataParallelScheme::DataParallelScheme(const TrainConfig& cfg, RankContext ctx)
    : cfg_(cfg),
      ctx_(ctx),
      model_(Model::create(cfg.model, ctx.alloc)),
      data_(cfg.model, cfg.seed),
      shards_(model_->layout(), ctx.comm.size()) {
  dp_ = ctx.comm.size();
  accum_ = parbench::accumulation_steps(cfg, dp_);
}

int accumulation_steps(const TrainConfig& c, int dp) {
  if (c.global_batch < 1) throw UsageError("--global-batch " + std::to_string(c.global_batch) + " must be >= 1");
  const int micro = c.micro_batch > 0 ? c.micro_batch : c.global_batch / dp;
  if (micro < 1 || c.global_batch % (dp * micro) != 0)
    throw UsageError("global batch " + std::to_string(c.global_batch) + " is not divisible by " + std::to_string(dp) +
                     " data-parallel ranks x micro-batch " + std::to_string(c.micro_batch > 0 ? c.micro_batch : micro) +
                     "; choose --global-batch = ranks x micro-batch x accumulation steps");
  return c.global_batch / (dp * micro);
}

double DataParallelScheme::run_microbatches(int step_index, UnitAccess& access, const std::function<void()>& before_last,
                                            bool local_objective) {
  const int micro = cfg_.global_batch / (dp_ * accum_), rank = ctx_.comm.rank();
  const float dloss = 1.0f / float(local_objective ? accum_ : accum_ * dp_);
  double loss_sum = 0;
  for (int k = 0; k < accum_; ++k) {
    if (k == accum_ - 1 && before_last) before_last();
    // Microbatch k of rank r holds global samples [(k dp + r) micro, +micro): the union over ranks and k is the
    // global batch whatever dp is, so every scheme sees the same samples.
    PB_RANGE("microbatch", Category::compute, {.microbatch = k});
    Batch batch = data_.batch(step_index, std::int64_t(k * dp_ + rank) * micro, micro, ctx_.alloc);
    double loss = 0;
    auto acts = model_->forward(batch, access, dloss, ctx_.stream, &loss);
    model_->backward(*acts, batch, access, ctx_.stream);
    loss_sum += loss;
  }
  return loss_sum / accum_;
}

double DataParallelScheme::global_loss(double local) const {
  double out = local;
  if (dp_ > 1) ctx_.comm.allreduce(&local, &out, 1, DType::f64, ReduceOp::avg, "auto");
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

Tensor DataParallelScheme::initial_full_params(MemCategory category) {
  std::vector<float> init = model_->initial_params(cfg_.seed);
  Tensor out = make(model_->layout().total, category);
  std::vector<char> raw(out.bytes());
  for (std::size_t i = 0; i < init.size(); ++i) store_from_double(raw.data(), out.dtype(), i, init[i]);
  device_memcpy(out.device(), out.data(), Device{}, raw.data(), raw.size());
  return out;
}

std::string implementation_for(const Communicator& comm, const std::string& impl, Collective c) {
  if (comm.resolve(impl).unsupported(c, comm).empty()) return impl;
  for (const auto& name : handwritten_algorithm_names())
    if (find_algorithm(name).unsupported(c, comm).empty()) return name;
  throw Error("no collective implementation here can run " + std::string(collective_name(c)));
}

std::string DataParallelScheme::impl_for(Collective c) const { return implementation_for(ctx_.comm, cfg_.impl, c); }

void DataParallelScheme::zero(Tensor& t) const { device_memset(t.device(), t.data(), 0, t.bytes()); }

void DataParallelScheme::copy_shard_out(const Tensor& full, Tensor& shard) const {
  zero(shard);
  const std::size_t es = dtype_size(full.dtype());
  const int r = ctx_.comm.rank();
  for (const auto& u : shards_.units) {
    const std::int64_t begin = r * u.piece, len = std::max<std::int64_t>(0, std::min(u.piece, u.numel - begin));
    if (len > 0)
      device_memcpy(shard.device(), static_cast<char*>(shard.data()) + u.shard_offset * es, full.device(),
                    static_cast<const char*>(full.data()) + (u.full_offset + begin) * es, len * es);
  }
}

void DataParallelScheme::reduce_scatter_unit(int unit, const Tensor& unit_grads, Tensor& shard_grads, bool accumulate) {
  PB_RANGE("reduce_scatter", Category::communication,
           {.layer = unit, .bytes = std::int64_t(unit_grads.bytes())});
  const auto& u = shards_.units[unit];
  const std::int64_t n = dp_;
  // The unit's gradient, padded to n pieces, reduced so that this rank receives the average of its piece.
  Tensor padded = Tensor(ctx_.alloc, unit_grads.dtype(), {u.piece * n}, MemCategory::communication);
  zero(padded);
  device_memcpy(padded.device(), padded.data(), unit_grads.device(), unit_grads.data(), unit_grads.bytes());
  Tensor piece = shard_grads.slice(u.shard_offset, {u.piece});
  Tensor result = accumulate ? Tensor(ctx_.alloc, unit_grads.dtype(), {u.piece}, MemCategory::communication) : piece;
  ctx_.comm.reduce_scatter(padded.data(), result.data(), std::size_t(u.piece), unit_grads.dtype(), ReduceOp::sum,
                           impl_for(Collective::reduce_scatter));
  comm_bytes_.sharded(std::uint64_t(u.numel) * dtype_size(unit_grads.dtype()), dp_);
  if (accumulate) ops::residual_forward(piece, piece, result, ctx_.stream);
}

void DataParallelScheme::all_gather_unit(int unit, const Tensor& shard, Tensor& unit_params) {
  PB_RANGE("all_gather", Category::communication, {.layer = unit, .bytes = std::int64_t(unit_params.bytes())});
  const auto& u = shards_.units[unit];
  Tensor padded = Tensor(ctx_.alloc, shard.dtype(), {u.piece * dp_}, MemCategory::communication);
  Tensor piece = shard.slice(u.shard_offset, {u.piece});
  ctx_.comm.allgather(piece.data(), padded.data(), std::size_t(u.piece), shard.dtype(), impl_for(Collective::allgather));
  comm_bytes_.sharded(std::uint64_t(u.numel) * dtype_size(shard.dtype()), dp_);
  device_memcpy(unit_params.device(), unit_params.data(), padded.device(), padded.data(), unit_params.bytes());
}

MemSplit zero_closed_form(const TrainConfig& cfg, std::int64_t psi, int n, int stage) {
  const std::int64_t p = std::int64_t(dtype_size(cfg.model.dtype)), k = FlatOptimizer::state_bytes_per_param(cfg);
  MemSplit m{};
  m[int(MemCategory::parameters)] = std::size_t(stage >= 3 ? p * psi / n : p * psi);
  m[int(MemCategory::gradients)] = std::size_t(stage >= 2 ? p * psi / n : p * psi);
  m[int(MemCategory::optimizer)] = std::size_t(stage >= 1 ? k * psi / n : k * psi);
  return m;
}

}  // namespace parbench
