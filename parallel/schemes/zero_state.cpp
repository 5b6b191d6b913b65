// Replicated or ZeRO-sharded state of a set of units over a data-parallel group.
#include "parallel/schemes/zero_state.h"

#include "base/error.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "parallel/schemes/data_parallel.h"
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

namespace {

ParamLayout packed_layout(const ParamLayout& layout, const std::vector<int>& units) {
  ParamLayout packed;
  for (int u : units) {
    UnitLayout unit = layout.units.at(std::size_t(u));
    unit.offset = packed.total;
    packed.total += unit.numel;
    packed.units.push_back(std::move(unit));
  }
  return packed;
}

}  // namespace

// Hands the model full units: views of the replicas (stages 0..2) or gathered copies (stage 3); gradients into
// the full buffer (stages 0, 1) or a per-unit buffer reduce-scattered when the unit is done (stages 2, 3).
class ZeroState::Access : public UnitAccess {
 public:
  Access(ZeroState& z, bool prefetch) : z(z), prefetch(prefetch) {}
  Tensor params(int unit) override {
    const int i = z.index_of(unit);
    if (z.stage_ < 3) return z.unit_of(z.full_params_, i);
    Tensor t = gathered(i);
    z.queue_.wait(gather_ticket.at(i));  // the compute stream's use of the unit waits for its gather only
    const int ahead = backward ? i - 1 : i + 1;  // prefetch the next unit in this pass's order
    if (prefetch && ahead >= 0 && ahead < int(z.packed_.units.size())) gathered(ahead);
    return t;
  }
  Tensor grads(int unit) override {
    const int i = z.index_of(unit);
    if (z.stage_ <= 1) return z.unit_of(z.full_grads_, i);
    if (z.stage_ >= 3) z.queue_.wait(gather_ticket.at((gathered(i), i)));  // FSDP gathers before backward anyway
    auto it = grad_bufs.find(i);
    if (it == grad_bufs.end()) {
      Tensor t = z.make(z.packed_.units[std::size_t(i)].numel, MemCategory::communication);
      z.zero(t);
      it = grad_bufs.emplace(i, std::move(t)).first;
    }
    return it->second;
  }
  void forward_done(int unit) override {
    const int i = z.index_of(unit);
    if (z.stage_ >= 3) gathered_units.erase(i);
    if (i == int(z.packed_.units.size()) - 1) backward = true;
  }
  void backward_done(int unit) override {
    const int i = z.index_of(unit);
    if (z.stage_ >= 2) {
      auto it = grad_bufs.find(i);
      if (it != grad_bufs.end()) {
        z.reduce_scatter_unit(i, it->second, z.shard_grads_, true);  // holds the buffer until it is done
        grad_bufs.erase(it);
      }
    }
    if (z.stage_ >= 3) gathered_units.erase(i);
    if (i == 0) backward = false;
  }

 private:
  Tensor gathered(int i) {
    auto it = gathered_units.find(i);
    if (it != gathered_units.end()) return it->second;
    Tensor t = z.make(z.packed_.units[std::size_t(i)].numel, MemCategory::communication);
    gather_ticket[i] = z.all_gather_unit(i, z.shard_params_, t);
    return gathered_units.emplace(i, std::move(t)).first->second;
  }
  ZeroState& z;
  const bool prefetch;
  bool backward = false;
  std::map<int, Tensor> gathered_units, grad_bufs;  // by packed index
  std::map<int, std::size_t> gather_ticket;           // the latest gather of each unit
};

ZeroState::ZeroState(const TrainConfig& cfg, int stage, const ParamLayout& layout, const std::vector<int>& units,
                     Communicator& group, const RankContext& ctx, CommCounter& counter, const Tensor& initial)
    : cfg_(cfg),
      stage_(stage),
      packed_(packed_layout(layout, units)),
      group_(group),
      alloc_(ctx.alloc),
      stream_(ctx.stream),
      counter_(counter),
      shards_(packed_, group.size()),
      pinned_alloc_(Device{}, ctx.stream.device()),  // pinned on a GPU: the offload copies each step are DMA
      host_alloc_(Device{}),
      host_stream_(Device{}),
      queue_(group, ctx.stream, ctx.communication_stream(), ctx.timeline,
             *implementation_for(group, cfg.impl, Collective::reduce_scatter)) {
  for (std::size_t i = 0; i < units.size(); ++i) index_[units[i]] = int(i);
  if (initial.numel() != packed_.total) throw Error("ZeroState: initial values do not match the held units");
  if (stage >= 3) {
    shard_params_ = make(shards_.shard_numel, MemCategory::parameters);
    copy_shard_out(initial, shard_params_);
  } else {
    full_params_ = make(packed_.total, MemCategory::parameters);
    device_memcpy(full_params_.device(), full_params_.data(), initial.device(), initial.data(), initial.bytes());
  }
  if (stage >= 2) shard_grads_ = make(shards_.shard_numel, MemCategory::gradients);
  else full_grads_ = make(packed_.total, MemCategory::gradients);
  const Tensor start = stage >= 3 ? shard_params_ : stage >= 1 ? shard_of_full() : full_params_;
  if (cfg.offload) {
    host_params_ = Tensor(pinned_alloc_, cfg.model.dtype, {start.numel()}, MemCategory::parameters);
    host_grads_ = Tensor(pinned_alloc_, cfg.model.dtype, {start.numel()}, MemCategory::gradients);
    device_memcpy(Device{}, host_params_.data(), start.device(), start.data(), start.bytes());
    opt_.emplace(cfg_, host_alloc_, host_params_, host_stream_);
  } else {
    opt_.emplace(cfg_, ctx.alloc, start, stream_);
  }
}

ZeroState::~ZeroState() = default;

UnitAccess& ZeroState::begin_step(bool prefetch) {
  if (stage_ >= 2) zero(shard_grads_);
  else zero(full_grads_);
  access_ = std::make_unique<Access>(*this, prefetch);
  return *access_;
}

void ZeroState::finish_step(int step_index) {
  access_.reset();
  const int n = group_.size();
  if (stage_ == 0) {
    if (n > 1) {
      queue_.submit([this](const Stream&) {
        PB_RANGE("allreduce gradients", Category::communication, {.bytes = std::int64_t(full_grads_.bytes())});
        group_.allreduce(full_grads_.data(), full_grads_.data(), std::size_t(full_grads_.numel()),
                         full_grads_.dtype(), ReduceOp::sum, impl_for(Collective::allreduce));
      });
      counter_.allreduce(std::uint64_t(full_grads_.bytes()), n);
    }
    queue_.join();
    update(full_params_, full_grads_, step_index);
    return;
  }
  if (stage_ == 1) {
    shard_grads_ = make(shards_.shard_numel, MemCategory::workspace);
    for (int i = 0; i < int(packed_.units.size()); ++i)
      reduce_scatter_unit(i, unit_of(full_grads_, i), shard_grads_, false);
  }
  queue_.join();  // the gradients' reduce-scatters
  Tensor shard = stage_ >= 3 ? shard_params_ : shard_of_full();
  update(shard, shard_grads_, step_index);
  if (stage_ < 3)
    for (int i = 0; i < int(packed_.units.size()); ++i) {
      Tensor unit = unit_of(full_params_, i);
      all_gather_unit(i, shard, unit);
    }
  if (stage_ == 1) shard_grads_ = Tensor();
  queue_.join();  // the all-gathers belong to this step: its end waits for them (on the stream, by an event)
}

std::vector<float> ZeroState::packed_params() {
  queue_.join();
  if (stage_ < 3) return host_floats(full_params_, stream_);
  Tensor full = make(packed_.total, MemCategory::workspace);
  for (int i = 0; i < int(packed_.units.size()); ++i) {
    Tensor unit = unit_of(full, i);
    all_gather_unit(i, shard_params_, unit);
  }
  queue_.join();
  return host_floats(full, stream_);
}

int ZeroState::index_of(int unit) const {
  auto it = index_.find(unit);
  if (it == index_.end()) throw Error("unit " + std::to_string(unit) + " is not held on this rank");
  return it->second;
}

Tensor ZeroState::unit_of(const Tensor& packed, int i) const {
  const UnitLayout& unit = packed_.units[std::size_t(i)];
  return packed.slice(unit.offset, {unit.numel});
}

Tensor ZeroState::make(std::int64_t n, MemCategory c) const { return Tensor(alloc_, cfg_.model.dtype, {n}, c); }

void ZeroState::zero(Tensor& t) const { device_memset_async(t.device(), t.data(), 0, t.bytes(), stream_); }

Tensor ZeroState::shard_of_full() const {
  Tensor s = make(shards_.shard_numel, MemCategory::workspace);
  copy_shard_out(full_params_, s);
  return s;
}

void ZeroState::copy_shard_out(const Tensor& full, Tensor& shard) const {
  zero(shard);
  const std::size_t es = dtype_size(full.dtype());
  const int r = group_.rank();
  for (const auto& u : shards_.units) {
    const std::int64_t begin = r * u.piece, len = std::max<std::int64_t>(0, std::min(u.piece, u.numel - begin));
    if (len > 0)
      device_memcpy_async(shard.device(), static_cast<char*>(shard.data()) + u.shard_offset * es, full.device(),
                          static_cast<const char*>(full.data()) + (u.full_offset + begin) * es, len * es, stream_);
  }
}

std::size_t ZeroState::reduce_scatter_unit(int i, const Tensor& unit_grads, Tensor& shard_grads, bool accumulate) {
  const auto& u = shards_.units[std::size_t(i)];
  const std::int64_t n = group_.size();
  counter_.sharded(std::uint64_t(u.numel) * dtype_size(unit_grads.dtype()), int(n));
  Tensor piece = shard_grads.slice(u.shard_offset, {u.piece});
  return queue_.submit(
      [this, i, &u, n, unit_grads, piece, accumulate](const Stream& s) mutable {
        PB_RANGE("reduce_scatter", Category::communication, {.layer = i, .bytes = std::int64_t(unit_grads.bytes())});
        // The unit's gradient, padded to n pieces, reduced so that this rank receives the sum of its piece.
        Tensor padded = Tensor(alloc_, unit_grads.dtype(), {u.piece * n}, MemCategory::communication);
        device_memset_async(padded.device(), padded.data(), 0, padded.bytes(), s);
        device_memcpy_async(padded.device(), padded.data(), unit_grads.device(), unit_grads.data(), unit_grads.bytes(),
                            s);
        Tensor result = accumulate ? Tensor(alloc_, unit_grads.dtype(), {u.piece}, MemCategory::communication) : piece;
        group_.reduce_scatter(padded.data(), result.data(), std::size_t(u.piece), unit_grads.dtype(), ReduceOp::sum,
                              impl_for(Collective::reduce_scatter));
        if (accumulate) ops::residual_forward(piece, piece, result, s);
      },
      {unit_grads, piece});
}

std::size_t ZeroState::all_gather_unit(int i, const Tensor& shard, Tensor& unit_params) {
  const auto& u = shards_.units[std::size_t(i)];
  counter_.sharded(std::uint64_t(u.numel) * dtype_size(shard.dtype()), group_.size());
  return queue_.submit(
      [this, i, &u, shard, unit_params](const Stream& s) {
        PB_RANGE("all_gather", Category::communication, {.layer = i, .bytes = std::int64_t(unit_params.bytes())});
        Tensor padded = Tensor(alloc_, shard.dtype(), {u.piece * group_.size()}, MemCategory::communication);
        Tensor piece = shard.slice(u.shard_offset, {u.piece});
        group_.allgather(piece.data(), padded.data(), std::size_t(u.piece), shard.dtype(),
                         impl_for(Collective::allgather));
        device_memcpy_async(unit_params.device(), unit_params.data(), padded.device(), padded.data(),
                            unit_params.bytes(), s);
      },
      {shard, unit_params});
}

void ZeroState::update(Tensor& params, const Tensor& grads, int step_index) {
  if (!cfg_.offload) return opt_->step(params, grads, step_index, stream_);
  // The host reads the reduced gradients: a wait with the collectives' timeout (a stalled one is reported).
  group_.wait_stream(stream_.native(), "the gradients' reduce-scatters before the offloaded optimizer step");
  device_memcpy(Device{}, host_grads_.data(), grads.device(), grads.data(), grads.bytes());
  opt_->step(host_params_, host_grads_, step_index, host_stream_);
  device_memcpy(params.device(), params.data(), Device{}, host_params_.data(), host_params_.bytes());
  counter_.host_device_bytes += host_grads_.bytes() + host_params_.bytes();
}

const Algorithm* ZeroState::impl_for(Collective c) const { return implementation_for(group_, cfg_.impl, c); }

}  // namespace parbench
