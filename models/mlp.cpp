// MLP: L residual blocks x + fcproj(gelu(fc(x))) on (B, C) vectors, MSE loss against the targets.
// Tensor parallelism: fc column-parallel and fcproj row-parallel over F/tp columns, the branch output summed over
// the tp ranks in forward and the branch's input gradient in backward (one allreduce each per block).
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"
#include "models/model.h"
#include "profiles/range.h"

namespace parbench {

namespace {

struct MlpActivations : Activations {
  std::vector<Tensor> pre;  // [unit] (B,F) fc output before bias and GELU
  std::vector<Tensor> a;    // [unit] (B,F) gelu(pre + fcb)
};

// Indices into Activations::stash[u]: the gradients at the block output and at the fc output.
enum MlpStash { kDy, kDpre };

class Mlp : public Model {
 public:
  Mlp(const ModelConfig& c, TrackedAllocator& a, TensorParallel* tp) : Model(c, a, tp) {}

 private:
  std::unique_ptr<Activations> new_activations() const override {
    auto a = std::make_unique<MlpActivations>();
    a->pre.resize(std::size_t(config_.layers));
    a->a.resize(std::size_t(config_.layers));
    return a;
  }

  void forward_unit(Activations& base, int l, const Batch& batch, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<MlpActivations&>(base);
    const std::int64_t B = batch.samples, C = config_.hidden, F = config_.ffn_dim() / config_.tp;
    const DType t = config_.dtype;
    if (l == 0) acts.x[0] = batch.inputs;
    PB_RANGE("forward", Category::compute, {.layer = l});
    Tensor p = access.params(l);
    Tensor pre = act(t, {B, F}), a = act(t, {B, F}), y = work(t, {B, C}), next = act(t, {B, C});
    const Tensor& x = acts.x[std::size_t(l)];
    ops::matmul_forward(pre, x, param(p, l, MlpParam::fcw), nullptr, s);
    ops::bias_gelu_forward(a, pre, param(p, l, MlpParam::fcb), s);
    Tensor fcprojb = param(p, l, MlpParam::fcprojb);
    // The row-parallel bias goes in once, on tp rank 0, before the sum over the ranks.
    ops::matmul_forward(y, a, param(p, l, MlpParam::fcprojw), tp_rank() == 0 ? &fcprojb : nullptr, s);
    if (tp_active()) tp_comm::allreduce(*tp_, y, ReduceOp::sum, s);
    ops::residual_forward(next, x, y, s);
    acts.pre[std::size_t(l)] = std::move(pre);
    acts.a[std::size_t(l)] = std::move(a);
    acts.x[std::size_t(l + 1)] = std::move(next);
    if (l == config_.layers - 1) {
      acts.losses = work(config_.stat_dtype(), {1});
      ops::mse_forward(acts.losses, acts.x[std::size_t(l + 1)], batch.targets, s);
    }
  }

  void loss_backward(Activations& acts, const Batch& batch, Tensor& dres, const Stream& s) override {
    ops::mse_backward(dres, acts.output(), batch.targets, acts.dloss, s);
  }

  void backward_input_unit(Activations& base, int l, const Batch& batch, Tensor& dres, UnitAccess& access,
                           const Stream& s) override {
    auto& acts = static_cast<MlpActivations&>(base);
    const std::int64_t B = batch.samples, F = config_.ffn_dim() / config_.tp;
    const DType t = config_.dtype;
    PB_RANGE("backward", Category::compute, {.layer = l});
    Tensor p = access.params(l);
    Tensor dy = keep(dres, s), da = work(t, {B, F}), dpre = act(t, {B, F});
    zero(da, s);
    ops::matmul_backward(&da, nullptr, nullptr, dres, acts.a[std::size_t(l)], param(p, l, MlpParam::fcprojw), true, s);
    ops::bias_gelu_backward(dpre, nullptr, acts.pre[std::size_t(l)], param(p, l, MlpParam::fcb), da, s);
    // The residual: dres (gradient at x[l+1]) plus the branch's input gradient is the gradient at x[l]; the
    // model's own input needs none.
    if (l > 0) {
      // Under tp each rank's branch gradient is partial: rank 0 adds it to the residual gradient (the same on every
      // rank), the others contribute theirs alone, and the allreduce sums them.
      if (tp_active() && tp_rank() != 0) zero(dres, s);
      ops::matmul_backward(&dres, nullptr, nullptr, dpre, acts.x[std::size_t(l)], param(p, l, MlpParam::fcw), true, s);
      if (tp_active()) tp_comm::allreduce(*tp_, dres, ReduceOp::sum, s);
    }
    acts.stash[std::size_t(l)] = {dy, dpre};
  }

  void backward_weight_unit(Activations& base, int l, const Batch&, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<MlpActivations&>(base);
    PB_RANGE("dW", Category::compute, {.layer = l});
    auto& stash = acts.stash[std::size_t(l)];
    Tensor p = access.params(l), g = access.grads(l);
    Tensor dfcw = param(g, l, MlpParam::fcw), dfcb = param(g, l, MlpParam::fcb);
    Tensor dfcprojw = param(g, l, MlpParam::fcprojw), dfcprojb = param(g, l, MlpParam::fcprojb);
    ops::matmul_backward(nullptr, &dfcprojw, &dfcprojb, stash[kDy], acts.a[std::size_t(l)], param(p, l, MlpParam::fcprojw),
                         true, s);
    ops::matmul_backward(nullptr, &dfcw, &dfcb, stash[kDpre], acts.x[std::size_t(l)], param(p, l, MlpParam::fcw), true, s);
    stash.clear();
  }
};

}  // namespace

std::unique_ptr<Model> make_mlp(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp) {
  return std::make_unique<Mlp>(config, alloc, tp);
}

}  // namespace parbench
