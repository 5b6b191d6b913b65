// The models (MLP, GPT- and Llama-style decoders): forward and backward written out on the kernel API (kernels/ops.h).
// Parameters and gradients are flat buffers owned by the parallelism scheme, handed to the model unit by unit
// through UnitAccess, so one model code serves every scheme (replicated, sharded, gathered per layer).
#pragma once
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/allocator.h"
#include "core/stream.h"
#include "models/config.h"
#include "models/data.h"
#include "models/tensor_parallel.h"

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

// Which part of a backward to run. Zero-bubble schedules split it: `input` computes the gradient at the piece's
// input (the critical path to the previous stage) and keeps each matmul's output gradient; `weight` later turns
// those into the weight gradients. `all` does both, unit by unit.
enum class BackwardPart { all, input, weight };

// What a forward keeps for its backward; freed with it. Indexed by absolute unit.
struct Activations {
  virtual ~Activations() = default;
  UnitRange range;
  float dloss = 1;
  std::vector<Tensor> x;                   // x[u]: input of unit u, x[u + 1] its output
  std::vector<std::vector<Tensor>> stash;  // [unit]: output gradients kept by the input part for the weight part
  Tensor losses;  // per-sample or per-token losses (last piece only; all B*T tokens on every tp rank)
  const Tensor& output() const { return x[std::size_t(range.last)]; }
};

class Model {
 public:
  // With config.tp > 1 the model is one tensor-parallel rank (tensor_parallel.h) and `tp` (its group, size
  // config.tp, rank = tp rank) is required; it must outlive the model, which adds its traffic to tp->bytes.
  static std::unique_ptr<Model> create(const ModelConfig& config, TrackedAllocator& alloc,
                                       TensorParallel* tp = nullptr);
  virtual ~Model() = default;

  const ModelConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  int units() const { return int(layout_.units.size()); }
  // The activation between two units: (B,T,C) for gpt ((B,T/tp,C), this rank's sequence shard, under sequence
  // parallelism), (B,C) for the MLP.
  Shape boundary_shape(std::int64_t samples) const;

  // Seeded initial values of the whole flat buffer (padding zero), as floats on the host. A tensor-parallel rank
  // gets its part of the full (tp = 1) model's values (tp_index), so tp runs start from the single-rank model.
  std::vector<float> initial_params(std::uint64_t seed) const;

  // Forward of one microbatch through units `r`. `input` is the previous piece's output (unused when r.first is
  // 0: the batch is the input); the result's output() is this piece's output. On the last piece *loss, when
  // given, gets the microbatch's mean loss (a host wait; without it the caller reads the result's losses itself). `dloss` is the weight of that mean loss in the step's objective (1 / (microbatches x
  // data-parallel ranks) when averaging), used by the fused loss gradient.
  std::unique_ptr<Activations> forward(const Batch& batch, UnitRange r, const Tensor& input, UnitAccess& access,
                                       float dloss, const Stream& s, double* loss);
  // Backward of that piece, units in reverse order, adding into each unit's gradients. `dout` is the gradient
  // at the piece's output (unused on the last piece). Returns the gradient at the piece's input (an empty
  // tensor when r.first is 0, and for the weight part).
  Tensor backward(Activations& acts, const Batch& batch, const Tensor& dout, UnitAccess& access, const Stream& s,
                  BackwardPart part = BackwardPart::all);

  // The whole model at once.
  std::unique_ptr<Activations> forward(const Batch& batch, UnitAccess& access, float dloss, const Stream& s,
                                       double* loss) {
    return forward(batch, {0, units()}, Tensor{}, access, dloss, s, loss);
  }
  void backward(Activations& acts, const Batch& batch, UnitAccess& access, const Stream& s) {
    backward(acts, batch, Tensor{}, access, s);
  }

 protected:
  Model(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp)
      : config_(config), layout_(make_layout(config)), alloc_(alloc), tp_(tp) {}
  // One unit's forward: reads acts.x[u] (or the batch), writes acts.x[u + 1] (or acts.losses on the last unit).
  virtual void forward_unit(Activations& acts, int u, const Batch& batch, UnitAccess& access, const Stream& s) = 0;
  // The loss gradient at the last unit's output, into dres (the last piece only).
  virtual void loss_backward(Activations& acts, const Batch& batch, Tensor& dres, const Stream& s) = 0;
  // dres holds the gradient at unit u's output on entry and at its input on return; output gradients that the
  // weight gradients need go to acts.stash[u].
  virtual void backward_input_unit(Activations& acts, int u, const Batch& batch, Tensor& dres, UnitAccess& access,
                                   const Stream& s) = 0;
  // Unit u's weight gradients from acts.stash[u] (which it then frees).
  virtual void backward_weight_unit(Activations& acts, int u, const Batch& batch, UnitAccess& access,
                                    const Stream& s) = 0;
  virtual std::unique_ptr<Activations> new_activations() const { return std::make_unique<Activations>(); }

  // A parameter of unit `unit` by its handle (EmbeddingParam, BlockParam, HeadParam in config.h): its slice of the
  // unit's flat buffer.
  template <class Handle>
    requires std::is_enum_v<Handle>
  Tensor param(const Tensor& unit_flat, int unit, Handle which) const {
    const ParamSpec& p = layout_.spec(unit, which);
    return unit_flat.slice(p.offset, p.shape);
  }
  Tensor act(DType t, Shape shape) const { return Tensor(alloc_, t, std::move(shape), MemCategory::activations); }
  Tensor work(DType t, Shape shape) const { return Tensor(alloc_, t, std::move(shape), MemCategory::workspace); }
  // A copy of t kept as an activation (stashed output gradients).
  Tensor keep(const Tensor& t, const Stream& s) const;  // a copy, queued on s
  void zero(Tensor& t, const Stream& s) const;
  // Waits for the stream and returns the mean of a small statistics tensor (losses).
  double mean_on_host(const Tensor& t, const Stream& s) const;

  // Tensor parallelism: the rank in the tp group (0 without one) and whether this rank must communicate.
  int tp_rank() const { return tp_ && tp_->comm ? tp_->comm->rank() : 0; }
  bool tp_active() const { return config_.tp > 1; }
  // Sequence parallelism with more than one rank (with one it changes nothing).
  bool sp_active() const { return config_.sequence_parallel && config_.tp > 1; }

  ModelConfig config_;
  ParamLayout layout_;
  TrackedAllocator& alloc_;
  TensorParallel* tp_ = nullptr;
};

std::unique_ptr<Model> make_mlp(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp);
std::unique_ptr<Model> make_gpt(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp);
std::unique_ptr<Model> make_llama(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp);

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
