// MLP: L residual blocks x + fcproj(gelu(fc(x))) on (B, C) vectors, MSE loss against the targets.
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"
#include "models/model.h"
#include "profiles/range.h"

namespace parbench {

namespace {

struct MlpActivations : Activations {
  std::vector<Tensor> x;    // x[l] (B,C): input of block l; x[L] the prediction
  std::vector<Tensor> pre;  // (B,F) fc output before bias and GELU
  std::vector<Tensor> a;    // (B,F) gelu(pre + fcb)
  float dloss = 1;
};

class Mlp : public Model {
 public:
  Mlp(const ModelConfig& c, TrackedAllocator& a) : Model(c, a) {}

  std::unique_ptr<Activations> forward(const Batch& batch, UnitAccess& access, float dloss, const Stream& s,
                                       double* loss) override {
    const std::int64_t B = batch.samples, C = config_.hidden, F = config_.ffn_dim();
    const DType t = config_.dtype;
    auto acts = std::make_unique<MlpActivations>();
    acts->dloss = dloss;
    acts->x.push_back(batch.inputs);
    for (int l = 0; l < config_.layers; ++l) {
      PB_RANGE("forward", Category::compute, {.layer = l});
      Tensor p = access.params(l);
      Tensor pre = act(t, {B, F}), a = act(t, {B, F}), y = work(t, {B, C}), next = act(t, {B, C});
      ops::matmul_forward(pre, acts->x[l], param(p, l, "fcw"), nullptr, s);
      ops::bias_gelu_forward(a, pre, param(p, l, "fcb"), s);
      Tensor fcprojb = param(p, l, "fcprojb");
      ops::matmul_forward(y, a, param(p, l, "fcprojw"), &fcprojb, s);
      ops::residual_forward(next, acts->x[l], y, s);
      access.forward_done(l);
      acts->pre.push_back(std::move(pre));
      acts->a.push_back(std::move(a));
      acts->x.push_back(std::move(next));
    }
    Tensor l = work(config_.stat_dtype(), {1});
    ops::mse_forward(l, acts->x.back(), batch.targets, s);
    *loss = mean_on_host(l, s);
    return acts;
  }

  void backward(Activations& base, const Batch& batch, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<MlpActivations&>(base);
    const std::int64_t B = batch.samples, C = config_.hidden, F = config_.ffn_dim();
    const DType t = config_.dtype;
    Tensor dres = work(t, {B, C}), da = work(t, {B, F}), dpre = work(t, {B, F});
    ops::mse_backward(dres, acts.x.back(), batch.targets, acts.dloss, s);
    for (int l = config_.layers - 1; l >= 0; --l) {
      PB_RANGE("backward", Category::compute, {.layer = l});
      Tensor p = access.params(l), g = access.grads(l);
      Tensor dfcw = param(g, l, "fcw"), dfcb = param(g, l, "fcb");
      Tensor dfcprojw = param(g, l, "fcprojw"), dfcprojb = param(g, l, "fcprojb");
      zero(da);
      ops::matmul_backward(&da, &dfcprojw, &dfcprojb, dres, acts.a[l], param(p, l, "fcprojw"), true, s);
      ops::bias_gelu_backward(dpre, &dfcb, acts.pre[l], param(p, l, "fcb"), da, s);
      // The residual: dres (gradient at x[l+1]) plus the branch's input gradient is the gradient at x[l].
      ops::matmul_backward(&dres, &dfcw, nullptr, dpre, acts.x[l], param(p, l, "fcw"), true, s);
      access.backward_done(l);
    }
  }
};

}  // namespace

std::unique_ptr<Model> make_mlp(const ModelConfig& config, TrackedAllocator& alloc) {
  return std::make_unique<Mlp>(config, alloc);
}

}  // namespace parbench
