// zero1, zero2, zero3 (= fsdp): ZeRO's three stages over the per-unit shards of ShardLayout.
//  1: optimizer state sharded; full gradients reduce-scattered after backward; parameters all-gathered after the
//     update.
//  2: gradients sharded too: each unit's gradient is reduce-scattered as soon as backward finishes it (every
//     microbatch), then its full-size buffer is freed.
//  3: parameters sharded too: a unit is all-gathered before its forward and again before its backward, one unit
//     ahead (prefetch), and freed after use, so at most two gathered units are alive.
// --offload keeps the optimizer state in host memory and updates there (FSDP's cpu_offload), counting the
// gradient and parameter copies between device and host.
#include <map>
#include <optional>

#include "core/error.h"
#include "core/memory.h"
#include "parallel/schemes/data_parallel.h"

namespace parbench {

namespace {

class Zero : public DataParallelScheme {
 public:
  Zero(const TrainConfig& cfg, RankContext ctx, int stage)
      : DataParallelScheme(cfg, ctx), stage_(stage), host_alloc_(Device{}), host_stream_(Device{}) {
    // Stage 3 keeps only its shard of the initial values; the full buffer is a temporary.
    Tensor full = initial_full_params(stage >= 3 ? MemCategory::workspace : MemCategory::parameters);
    if (stage >= 3) {
      shard_params_ = make(shards_.shard_numel, MemCategory::parameters);
      copy_shard_out(full, shard_params_);
    } else {
      full_params_ = std::move(full);
    }
    if (stage >= 2) shard_grads_ = make(shards_.shard_numel, MemCategory::gradients);
    else full_grads_ = make(model_->layout().total, MemCategory::gradients);
    Tensor initial = stage >= 3 ? shard_params_ : shard_of_full();
    if (cfg.offload) {
      host_params_ = Tensor(host_alloc_, cfg.model.dtype, {shards_.shard_numel}, MemCategory::parameters);
      host_grads_ = Tensor(host_alloc_, cfg.model.dtype, {shards_.shard_numel}, MemCategory::gradients);
      device_memcpy(Device{}, host_params_.data(), initial.device(), initial.data(), initial.bytes());
      opt_.emplace(cfg_, host_alloc_, host_params_);
    } else {
      opt_.emplace(cfg_, ctx.alloc, initial);
    }
  }

  double step(int step_index) override {
    comm_bytes_ = {};
    if (stage_ >= 2) zero(shard_grads_);
    else zero(full_grads_);
    Access access(*this);
    double loss = run_microbatches(step_index, access);
    if (stage_ == 1) {
      shard_grads_ = make(shards_.shard_numel, MemCategory::workspace);
      for (int u = 0; u < model_->units(); ++u)
        reduce_scatter_unit(u, unit_of(full_grads_, u), shard_grads_, false);
    }
    Tensor shard = stage_ >= 3 ? shard_params_ : shard_of_full();
    update(shard, step_index);
    if (stage_ < 3)
      for (int u = 0; u < model_->units(); ++u) {
        Tensor unit = unit_of(full_params_, u);
        all_gather_unit(u, shard, unit);
      }
    if (stage_ == 1) shard_grads_ = Tensor();
    return global_loss(loss);
  }

  std::vector<float> full_params() override {
    if (stage_ < 3) return to_host_floats(full_params_);
    Tensor full = make(model_->layout().total, MemCategory::workspace);
    for (int u = 0; u < model_->units(); ++u) {
      Tensor unit = unit_of(full, u);
      all_gather_unit(u, shard_params_, unit);
    }
    return to_host_floats(full);
  }

  MemSplit estimated_state_bytes() const override {
    MemSplit m = zero_closed_form(cfg_, model_->layout().parameters, dp_, stage_);
    if (cfg_.offload) m[int(MemCategory::optimizer)] = 0;  // in host memory
    return m;
  }

 private:
  // Hands the model full units: views of the replicas (stages 1, 2) or gathered copies (stage 3); gradients
  // into the full buffer (stage 1) or a per-unit buffer reduce-scattered when the unit is done (stages 2, 3).
  struct Access : UnitAccess {
    explicit Access(Zero& z) : z(z) {}
    Tensor params(int unit) override {
      if (z.stage_ < 3) return z.unit_of(z.full_params_, unit);
      Tensor t = gathered(unit);
      const int ahead = backward ? unit - 1 : unit + 1;  // prefetch the next unit in this pass's order
      if (ahead >= 0 && ahead < z.model_->units()) gathered(ahead);
      return t;
    }
    Tensor grads(int unit) override {
      if (z.stage_ == 1) return z.unit_of(z.full_grads_, unit);
      if (z.stage_ >= 3) gathered(unit);  // FSDP gathers a unit's parameters before its backward in any case
      auto it = grad_bufs.find(unit);
      if (it == grad_bufs.end()) {
        Tensor t = z.make(z.model_->layout().units[unit].numel, MemCategory::communication);
        z.zero(t);
        it = grad_bufs.emplace(unit, std::move(t)).first;
      }
      return it->second;
    }
    void forward_done(int unit) override {
      if (z.stage_ >= 3) gathered_units.erase(unit);
      if (unit == z.model_->units() - 1) backward = true;
    }
    void backward_done(int unit) override {
      if (z.stage_ >= 2) {
        auto it = grad_bufs.find(unit);
        if (it != grad_bufs.end()) {
          z.reduce_scatter_unit(unit, it->second, z.shard_grads_, true);
          grad_bufs.erase(it);
        }
      }
      if (z.stage_ >= 3) gathered_units.erase(unit);
      if (unit == 0) backward = false;
    }
    Tensor gathered(int unit) {
      auto it = gathered_units.find(unit);
      if (it != gathered_units.end()) return it->second;
      Tensor t = z.make(z.model_->layout().units[unit].numel, MemCategory::communication);
      z.all_gather_unit(unit, z.shard_params_, t);
      return gathered_units.emplace(unit, std::move(t)).first->second;
    }
    Zero& z;
    bool backward = false;
    std::map<int, Tensor> gathered_units, grad_bufs;
  };

  Tensor unit_of(const Tensor& full, int u) const {
    const UnitLayout& unit = model_->layout().units[u];
    return full.slice(unit.offset, {unit.numel});
  }
  Tensor shard_of_full() {
    Tensor s = make(shards_.shard_numel, MemCategory::workspace);
    copy_shard_out(full_params_, s);
    return s;
  }
  void update(Tensor& shard, int step_index) {
    if (!cfg_.offload) return opt_->step(shard, shard_grads_, step_index, ctx_.stream);
    ctx_.stream.synchronize();
    device_memcpy(Device{}, host_grads_.data(), shard_grads_.device(), shard_grads_.data(), shard_grads_.bytes());
    opt_->step(host_params_, host_grads_, step_index, host_stream_);
    device_memcpy(shard.device(), shard.data(), Device{}, host_params_.data(), host_params_.bytes());
    comm_bytes_.host_device_bytes += host_grads_.bytes() + host_params_.bytes();
  }

  int stage_;
  TrackedAllocator host_alloc_;
  Stream host_stream_;
  Tensor full_params_, full_grads_, shard_params_, shard_grads_, host_params_, host_grads_;
  std::optional<FlatOptimizer> opt_;
};

}  // namespace

std::unique_ptr<Scheme> make_zero(const TrainConfig& cfg, RankContext ctx, int stage) {
  return std::make_unique<Zero>(cfg, ctx, stage);
}

}  // namespace parbench
