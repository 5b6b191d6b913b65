// GPT-style decoder: token + position embeddings, L pre-LN blocks of causal attention and MLP with residuals,
// a final layernorm, an untied LM head and the fused softmax cross-entropy (llm.c's layer order).
#include <numeric>
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"
#include "models/model.h"
#include "profiles/range.h"

namespace parbench {

namespace {

struct BlockActivations {
  Tensor ln1, mean1, rstd1, qkv, atty, att_or_lse, x2, ln2, mean2, rstd2, fch, fch_gelu;
};

struct GptActivations : Activations {
  std::vector<Tensor> x;  // x[l] (B,T,C): input of block l; x[L] the input of the final layernorm
  std::vector<BlockActivations> blocks;
  Tensor lnf, meanf, rstdf, dlogits;  // dlogits (B,T,V): the fused loss gradient, computed in forward
};

class Gpt : public Model {
 public:
  Gpt(const ModelConfig& c, TrackedAllocator& a) : Model(c, a) {}

  int head_unit() const { return config_.layers + 1; }

  std::unique_ptr<Activations> forward(const Batch& batch, UnitAccess& access, float dloss, const Stream& s,
                                       double* loss) override {
    const std::int64_t B = batch.samples, T = config_.seq, C = config_.hidden, F = config_.ffn_dim(),
                       V = config_.vocab, NH = config_.heads;
    const DType t = config_.dtype, st = config_.stat_dtype();
    auto acts = std::make_unique<GptActivations>();
    {
      PB_RANGE("forward embedding", Category::compute, {.layer = 0});
      Tensor p = access.params(0), x0 = act(t, {B, T, C});
      ops::encoder_forward(x0, batch.inputs, param(p, 0, "wte"), param(p, 0, "wpe"), s);
      access.forward_done(0);
      acts->x.push_back(std::move(x0));
    }
    for (int l = 0; l < config_.layers; ++l) {
      const int u = l + 1;
      PB_RANGE("forward block", Category::compute, {.layer = u});
      Tensor p = access.params(u);
      BlockActivations b;
      b.ln1 = act(t, {B, T, C}), b.mean1 = act(st, {B, T}), b.rstd1 = act(st, {B, T});
      b.qkv = act(t, {B, T, 3 * C}), b.atty = act(t, {B, T, C}), b.x2 = act(t, {B, T, C});
      b.ln2 = act(t, {B, T, C}), b.mean2 = act(st, {B, T}), b.rstd2 = act(st, {B, T});
      b.fch = act(t, {B, T, F}), b.fch_gelu = act(t, {B, T, F});
      Tensor proj = work(t, {B, T, C}), next = act(t, {B, T, C});
      const Tensor& x = acts->x[l];
      ops::layernorm_forward(b.ln1, b.mean1, b.rstd1, x, param(p, u, "ln1w"), param(p, u, "ln1b"), s);
      Tensor qkvb = param(p, u, "qkvb"), projb = param(p, u, "projb");
      Tensor fcb = param(p, u, "fcb"), fcprojb = param(p, u, "fcprojb");
      ops::matmul_forward(b.qkv, b.ln1, param(p, u, "qkvw"), &qkvb, s);
      if (config_.flash_attention) {
        b.att_or_lse = act(st, {B, NH, T});
        ops::flash_attention_forward(b.atty, b.att_or_lse, b.qkv, int(NH), s);
      } else {
        b.att_or_lse = act(st, {B, NH, T, T});
        ops::attention_forward(b.atty, b.att_or_lse, b.qkv, int(NH), s);
      }
      ops::matmul_forward(proj, b.atty, param(p, u, "projw"), &projb, s);
      ops::residual_forward(b.x2, x, proj, s);
      ops::layernorm_forward(b.ln2, b.mean2, b.rstd2, b.x2, param(p, u, "ln2w"), param(p, u, "ln2b"), s);
      ops::matmul_forward(b.fch, b.ln2, param(p, u, "fcw"), &fcb, s);
      ops::gelu_forward(b.fch_gelu, b.fch, s);
      ops::matmul_forward(proj, b.fch_gelu, param(p, u, "fcprojw"), &fcprojb, s);
      ops::residual_forward(next, b.x2, proj, s);
      access.forward_done(u);
      acts->blocks.push_back(std::move(b));
      acts->x.push_back(std::move(next));
    }
    const int h = head_unit();
    PB_RANGE("forward head", Category::compute, {.layer = h});
    Tensor p = access.params(h);
    acts->lnf = act(t, {B, T, C}), acts->meanf = act(st, {B, T}), acts->rstdf = act(st, {B, T});
    acts->dlogits = act(t, {B, T, V});
    Tensor losses = work(st, {B, T});
    ops::layernorm_forward(acts->lnf, acts->meanf, acts->rstdf, acts->x.back(), param(p, h, "lnfw"),
                           param(p, h, "lnfb"), s);
    ops::matmul_forward(acts->dlogits, acts->lnf, param(p, h, "lmw"), nullptr, s);
    // The microbatch loss is the mean over its B*T tokens, weighted by dloss in the step's objective.
    ops::crossentropy_forward_backward(losses, &acts->dlogits, acts->dlogits, batch.targets,
                                       dloss / float(B * T), s);
    access.forward_done(h);
    *loss = mean_on_host(losses, s);
    return acts;
  }

  void backward(Activations& base, const Batch& batch, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    const std::int64_t B = batch.samples, T = config_.seq, C = config_.hidden, F = config_.ffn_dim(),
                       NH = config_.heads;
    const DType t = config_.dtype, st = config_.stat_dtype();
    Tensor dres = work(t, {B, T, C}), dln = work(t, {B, T, C}), datty = work(t, {B, T, C});
    Tensor dfch = work(t, {B, T, F}), dqkv = work(t, {B, T, 3 * C});
    Tensor scratch = config_.flash_attention ? work(st, {B, NH, T}) : work(st, {B, NH, T, T});
    {
      const int h = head_unit();
      PB_RANGE("backward head", Category::compute, {.layer = h});
      Tensor p = access.params(h), g = access.grads(h);
      Tensor dlmw = param(g, h, "lmw"), dlnfw = param(g, h, "lnfw"), dlnfb = param(g, h, "lnfb");
      zero(dln);
      ops::matmul_backward(&dln, &dlmw, nullptr, acts.dlogits, acts.lnf, param(p, h, "lmw"), true, s);
      zero(dres);
      ops::layernorm_backward(dres, dlnfw, dlnfb, dln, acts.x.back(), param(p, h, "lnfw"), acts.meanf, acts.rstdf, s);
      access.backward_done(h);
    }
    for (int l = config_.layers - 1; l >= 0; --l) {
      const int u = l + 1;
      PB_RANGE("backward block", Category::compute, {.layer = u});
      BlockActivations& b = acts.blocks[l];
      Tensor p = access.params(u), g = access.grads(u);
      auto grad = [&](const char* name) { return param(g, u, name); };
      Tensor dfcprojw = grad("fcprojw"), dfcprojb = grad("fcprojb"), dfcw = grad("fcw"), dfcb = grad("fcb");
      Tensor dln2w = grad("ln2w"), dln2b = grad("ln2b"), dprojw = grad("projw"), dprojb = grad("projb");
      Tensor dqkvw = grad("qkvw"), dqkvb = grad("qkvb"), dln1w = grad("ln1w"), dln1b = grad("ln1b");
      // MLP branch: dres holds the gradient at the block output x3 = x2 + fcproj(...).
      zero(dfch);
      ops::matmul_backward(&dfch, &dfcprojw, &dfcprojb, dres, b.fch_gelu, param(p, u, "fcprojw"), true, s);
      ops::gelu_backward(dfch, b.fch, dfch, s);
      zero(dln);
      ops::matmul_backward(&dln, &dfcw, &dfcb, dfch, b.ln2, param(p, u, "fcw"), true, s);
      ops::layernorm_backward(dres, dln2w, dln2b, dln, b.x2, param(p, u, "ln2w"), b.mean2, b.rstd2, s);
      // Attention branch: dres now holds the gradient at x2 = x + proj(attention(...)).
      zero(datty);
      ops::matmul_backward(&datty, &dprojw, &dprojb, dres, b.atty, param(p, u, "projw"), true, s);
      if (config_.flash_attention)
        ops::flash_attention_backward(dqkv, scratch, datty, b.qkv, b.atty, b.att_or_lse, int(NH), s);
      else
        ops::attention_backward(dqkv, scratch, datty, b.qkv, b.att_or_lse, int(NH), s);
      zero(dln);
      ops::matmul_backward(&dln, &dqkvw, &dqkvb, dqkv, b.ln1, param(p, u, "qkvw"), true, s);
      ops::layernorm_backward(dres, dln1w, dln1b, dln, acts.x[l], param(p, u, "ln1w"), b.mean1, b.rstd1, s);
      access.backward_done(u);
    }
    PB_RANGE("backward embedding", Category::compute, {.layer = 0});
    Tensor g = access.grads(0);  // the embedding backward needs no parameter values
    Tensor dwte = param(g, 0, "wte"), dwpe = param(g, 0, "wpe");
    ops::encoder_backward(dwte, dwpe, dres, batch.inputs, s);
    access.backward_done(0);
  }
};

}  // namespace

std::unique_ptr<Model> make_gpt(const ModelConfig& config, TrackedAllocator& alloc) {
  return std::make_unique<Gpt>(config, alloc);
}

}  // namespace parbench
