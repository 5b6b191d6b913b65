// The models (MLP, GPT-style decoder): forward and backward written out on the kernel API (kernels/ops.h).
// Parameters and gradients are flat buffers owned by the parallelism scheme, handed to the model unit by unit
// through UnitAccess, so one model code serves every scheme (replicated, sharded, gathered per layer).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/stream.h"
#include "models/config.h"
#include "models/data.h"

namespace parbench {

class UnitAccess {
 public:
  virtual ~UnitAccess() = default;
  // The unit's parameters, flat (layout numel), in the model dtype; valid until forward_done / backward_done.
  virtual Tensor params(int unit) = 0;
  // The unit's gradient buffer, flat, model dtype: backward adds this microbatch's gradients into it.
  virtual Tensor grads(int unit) = 0;
  virtual void forward_done(int /*unit*/) {}
  // The unit's gradients for this microbatch are all added (DDP launches a bucket, ZeRO reduce-scatters).
  virtual void backward_done(int /*unit*/) {}
};

// What a forward keeps for its backward; freed with it.
struct Activations {
  virtual ~Activations() = default;
};

class Model {
 public:
  static std::unique_ptr<Model> create(const ModelConfig& config, TrackedAllocator& alloc);
  virtual ~Model() = default;

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  int units() const { return int(layout_.units.size()); }

  // Seeded initial values of the whole flat buffer (padding zero), as floats on the host.
  std::vector<float> initial_params(std::uint64_t seed) const;

  // Forward of one microbatch; returns its mean loss in *loss. `dloss` is the weight of this microbatch's mean
  // loss in the step's objective (1 / (microbatches x data-parallel ranks) when averaging), used by the fused
  // loss gradient.
  virtual std::unique_ptr<Activations> forward(const Batch& batch, UnitAccess& access, float dloss, const Stream& s,
                                               double* loss) = 0;
  // Backward of that microbatch, units in reverse order, adding into each unit's gradients.
  virtual void backward(Activations& acts, const Batch& batch, UnitAccess& access, const Stream& s) = 0;

 protected:
  Model(const ModelConfig& config, TrackedAllocator& alloc)
      : config_(config), layout_(make_layout(config)), alloc_(alloc) {}
  Tensor param(const Tensor& unit_flat, int unit, std::string_view name) const;
  Tensor act(DType t, Shape shape) const { return Tensor(alloc_, t, std::move(shape), MemCategory::activations); }
  Tensor work(DType t, Shape shape) const { return Tensor(alloc_, t, std::move(shape), MemCategory::workspace); }
  void zero(Tensor& t) const;
  // Waits for the stream and returns the mean of a small statistics tensor (losses).
  double mean_on_host(const Tensor& t, const Stream& s) const;

  ModelConfig config_;
  ParamLayout layout_;
  TrackedAllocator& alloc_;
};

std::unique_ptr<Model> make_mlp(const ModelConfig& config, TrackedAllocator& alloc);
std::unique_ptr<Model> make_gpt(const ModelConfig& config, TrackedAllocator& alloc);

// A UnitAccess over whole flat buffers (single rank, DDP, ZeRO-1/2): views of `params` and `grads`.
class FlatAccess : public UnitAccess {
 public:
  FlatAccess(const ParamLayout& layout, Tensor params, Tensor grads)
      : layout_(layout), params_(std::move(params)), grads_(std::move(grads)) {}
  Tensor params(int unit) override;
  Tensor grads(int unit) override;

 private:
  const ParamLayout& layout_;
  Tensor params_, grads_;
};

}  // namespace parbench
