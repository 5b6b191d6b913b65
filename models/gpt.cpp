// GPT-style decoder: token + position embeddings, L pre-LN blocks of causal attention and MLP with residuals,
// a final layernorm, an untied LM head and the fused softmax cross-entropy (llm.c's layer order).
// Units: 0 the embedding, 1..L the blocks, L+1 the head.
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

// Indices into Activations::stash[u] of a block: the output gradients of its four matmuls.
enum BlockStash { kDx3, kDfch, kDx2, kDqkv };

struct GptActivations : Activations {
  std::vector<BlockActivations> blocks;  // [unit]
  Tensor lnf, meanf, rstdf, dlogits;     // dlogits (B,T,V): the fused loss gradient, computed in forward
};

class Gpt : public Model {
 public:
  Gpt(const ModelConfig& c, TrackedAllocator& a) : Model(c, a) {}

 private:
  int head_unit() const { return config_.layers + 1; }
  std::unique_ptr<Activations> new_activations() const override {
    auto a = std::make_unique<GptActivations>();
    a->blocks.resize(std::size_t(config_.layers + 2));
    return a;
  }

  void forward_unit(Activations& base, int u, const Batch& batch, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    const std::int64_t B = batch.samples, T = config_.seq, C = config_.hidden, F = config_.ffn_dim(),
                       V = config_.vocab, NH = config_.heads;
    const DType t = config_.dtype, st = config_.stat_dtype();
    Tensor p = access.params(u);
    if (u == 0) {
      PB_RANGE("forward embedding", Category::compute, {.layer = 0});
      Tensor x0 = act(t, {B, T, C});
      ops::encoder_forward(x0, batch.inputs, param(p, 0, "wte"), param(p, 0, "wpe"), s);
      acts.x[1] = std::move(x0);
      return;
    }
    const Tensor& x = acts.x[std::size_t(u)];
    if (u == head_unit()) {
      PB_RANGE("forward head", Category::compute, {.layer = u});
      acts.lnf = act(t, {B, T, C}), acts.meanf = act(st, {B, T}), acts.rstdf = act(st, {B, T});
      acts.dlogits = act(t, {B, T, V});
      acts.losses = work(st, {B, T});
      ops::layernorm_forward(acts.lnf, acts.meanf, acts.rstdf, x, param(p, u, "lnfw"), param(p, u, "lnfb"), s);
      ops::matmul_forward(acts.dlogits, acts.lnf, param(p, u, "lmw"), nullptr, s);
      // The microbatch loss is the mean over its B*T tokens, weighted by dloss in the step's objective.
      ops::crossentropy_forward_backward(acts.losses, &acts.dlogits, acts.dlogits, batch.targets,
                                         acts.dloss / float(B * T), s);
      return;
    }
    PB_RANGE("forward block", Category::compute, {.layer = u});
    BlockActivations& b = acts.blocks[std::size_t(u)];
    b.ln1 = act(t, {B, T, C}), b.mean1 = act(st, {B, T}), b.rstd1 = act(st, {B, T});
    b.qkv = act(t, {B, T, 3 * C}), b.atty = act(t, {B, T, C}), b.x2 = act(t, {B, T, C});
    b.ln2 = act(t, {B, T, C}), b.mean2 = act(st, {B, T}), b.rstd2 = act(st, {B, T});
    b.fch = act(t, {B, T, F}), b.fch_gelu = act(t, {B, T, F});
    Tensor proj = work(t, {B, T, C}), next = act(t, {B, T, C});
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
    acts.x[std::size_t(u + 1)] = std::move(next);
  }

  // The head's input part writes the gradient at its input itself.
  void loss_backward(Activations&, const Batch&, Tensor&, const Stream&) override {}

  void backward_input_unit(Activations& base, int u, const Batch& batch, Tensor& dres, UnitAccess& access,
                           const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    const std::int64_t B = batch.samples, T = config_.seq, C = config_.hidden, F = config_.ffn_dim(),
                       NH = config_.heads;
    const DType t = config_.dtype, st = config_.stat_dtype();
    auto& stash = acts.stash[std::size_t(u)];
    if (u == 0) {  // the embedding has no input gradient: keep the gradient at its output for the weight part
      stash = {dres};
      return;
    }
    Tensor p = access.params(u), g = access.grads(u);
    Tensor dln = work(t, {B, T, C});
    if (u == head_unit()) {
      PB_RANGE("backward head", Category::compute, {.layer = u});
      Tensor dlnfw = param(g, u, "lnfw"), dlnfb = param(g, u, "lnfb");
      zero(dln);
      ops::matmul_backward(&dln, nullptr, nullptr, acts.dlogits, acts.lnf, param(p, u, "lmw"), true, s);
      zero(dres);
      ops::layernorm_backward(dres, dlnfw, dlnfb, dln, acts.x[std::size_t(u)], param(p, u, "lnfw"), acts.meanf,
                              acts.rstdf, s);
      return;
    }
    PB_RANGE("backward block", Category::compute, {.layer = u});
    BlockActivations& b = acts.blocks[std::size_t(u)];
    Tensor dln2w = param(g, u, "ln2w"), dln2b = param(g, u, "ln2b");
    Tensor dln1w = param(g, u, "ln1w"), dln1b = param(g, u, "ln1b");
    Tensor dfch = act(t, {B, T, F}), dqkv = act(t, {B, T, 3 * C}), datty = work(t, {B, T, C});
    Tensor scratch = config_.flash_attention ? work(st, {B, NH, T}) : work(st, {B, NH, T, T});
    // MLP branch: dres holds the gradient at the block output x3 = x2 + fcproj(...).
    Tensor dx3 = keep(dres);
    zero(dfch);
    ops::matmul_backward(&dfch, nullptr, nullptr, dres, b.fch_gelu, param(p, u, "fcprojw"), true, s);
    ops::gelu_backward(dfch, b.fch, dfch, s);
    zero(dln);
    ops::matmul_backward(&dln, nullptr, nullptr, dfch, b.ln2, param(p, u, "fcw"), true, s);
    ops::layernorm_backward(dres, dln2w, dln2b, dln, b.x2, param(p, u, "ln2w"), b.mean2, b.rstd2, s);
    // Attention branch: dres now holds the gradient at x2 = x + proj(attention(...)).
    Tensor dx2 = keep(dres);
    zero(datty);
    ops::matmul_backward(&datty, nullptr, nullptr, dres, b.atty, param(p, u, "projw"), true, s);
    if (config_.flash_attention)
      ops::flash_attention_backward(dqkv, scratch, datty, b.qkv, b.atty, b.att_or_lse, int(NH), s);
    else
      ops::attention_backward(dqkv, scratch, datty, b.qkv, b.att_or_lse, int(NH), s);
    zero(dln);
    ops::matmul_backward(&dln, nullptr, nullptr, dqkv, b.ln1, param(p, u, "qkvw"), true, s);
    ops::layernorm_backward(dres, dln1w, dln1b, dln, acts.x[std::size_t(u)], param(p, u, "ln1w"), b.mean1, b.rstd1,
                            s);
    stash = {dx3, dfch, dx2, dqkv};
  }

  void backward_weight_unit(Activations& base, int u, const Batch& batch, UnitAccess& access,
                            const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    auto& stash = acts.stash[std::size_t(u)];
    Tensor g = access.grads(u);
    auto grad = [&](const char* name) { return param(g, u, name); };
    if (u == 0) {
      PB_RANGE("weight grad embedding", Category::compute, {.layer = 0});
      Tensor dwte = grad("wte"), dwpe = grad("wpe");  // the embedding backward needs no parameter values
      ops::encoder_backward(dwte, dwpe, stash[0], batch.inputs, s);
    } else if (u == head_unit()) {
      PB_RANGE("weight grad head", Category::compute, {.layer = u});
      Tensor p = access.params(u), dlmw = grad("lmw");
      ops::matmul_backward(nullptr, &dlmw, nullptr, acts.dlogits, acts.lnf, param(p, u, "lmw"), true, s);
    } else {
      PB_RANGE("weight grad block", Category::compute, {.layer = u});
      const BlockActivations& b = acts.blocks[std::size_t(u)];
      Tensor p = access.params(u);
      auto linear = [&](const char* w, const char* bias, int dout, const Tensor& inp) {
        Tensor dw = grad(w), db = grad(bias);
        ops::matmul_backward(nullptr, &dw, &db, stash[std::size_t(dout)], inp, param(p, u, w), true, s);
      };
      linear("fcprojw", "fcprojb", kDx3, b.fch_gelu);
      linear("fcw", "fcb", kDfch, b.ln2);
      linear("projw", "projb", kDx2, b.atty);
      linear("qkvw", "qkvb", kDqkv, b.ln1);
    }
    stash.clear();
  }
};

}  // namespace

std::unique_ptr<Model> make_gpt(const ModelConfig& config, TrackedAllocator& alloc) {
  return std::make_unique<Gpt>(config, alloc);
}

}  // namespace parbench
