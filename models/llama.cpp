// Llama-style decoder: a token embedding (no position table), L pre-norm blocks of RMSNorm, causal grouped-query
// attention with rotary positions on q and k, RMSNorm fused with the residual add, and a SwiGLU MLP, each with a
// residual; a final RMSNorm, the untied LM head and the fused softmax cross-entropy. No biases.
// Units: 0 the embedding, 1..L the blocks, L+1 the head.
// Tensor parallelism (Megatron, as gpt.cpp): each tp rank runs NH/tp query heads and KV/tp whole key/value heads
// (qkvw's rows q | k | v of them) and F/tp SwiGLU columns (gate_upw's rows gate | up of them), o and down
// row-parallel; sequence parallelism keeps the norms and residuals on a T/tp shard. The rotary embedding turns the
// full-sequence q and k in place (positions 0..T-1) after the q/k/v projection, from one table per model.
#include <vector>

#include "kernels/ops.h"
#include "models/decoder.h"
#include "profiles/range.h"

namespace parbench {

namespace {

// n1, n2: the full-sequence RMSNorm outputs the column-parallel matmuls read (gathered under sp); qkv: q and k
// rotated; x2 = x + o(attention); gu: gate | up; h = silu(gate) * up.
struct LlamaBlockActivations {
  Tensor n1, rstd1, qkv, atty, att_or_lse, x2, n2, rstd2, gu, h;
};

// Indices into Activations::stash[u] of a block: the output gradients of its four matmuls.
enum LlamaStash { kLlamaDx3, kLlamaDgu, kLlamaDx2, kLlamaDqkv };

struct LlamaActivations : Activations {
  std::vector<LlamaBlockActivations> blocks;  // [unit]
  // normf: the head's full-sequence RMSNorm output; dlogits (B,T,V/tp): the fused loss gradient, made in forward.
  Tensor normf, rstdf, dlogits;
};

class Llama : public Decoder {
 public:
  Llama(const ModelConfig& c, TrackedAllocator& a, TensorParallel* tp) : Decoder(c, a, tp) {}

 private:
  // A microbatch's sizes on this rank: n tp ranks split the query and key/value heads, the SwiGLU columns and the
  // vocabulary; sp the sequence (Ts) outside attention and the MLP. Q = (NH + 2 KV) D rows of the q/k/v output.
  struct Dims {
    std::int64_t B, T, Ts, C, F, NH, KV, D, Q;
    DType t, st;  // storage and statistics
  };
  Dims dims(const Batch& batch) const {
    const int n = config_.tp;
    const std::int64_t NH = config_.heads / n, KV = config_.kv_head_count() / n, D = config_.head_dim();
    return {batch.samples, config_.seq, config_.local_seq(), config_.hidden, config_.ffn_dim() / n,
            NH, KV, D, (NH + 2 * KV) * D, config_.dtype, config_.stat_dtype()};
  }
  float eps() const { return float(config_.rms_norm_eps); }

  std::unique_ptr<Activations> new_activations() const override {
    auto a = std::make_unique<LlamaActivations>();
    a->blocks.resize(std::size_t(config_.layers + 2));
    return a;
  }

  // The rotary table (T, D/2, 2), computed on first use and kept by the model for every layer and microbatch. The
  // stream is synchronised once so that later microbatches on any stream may read it.
  const Tensor& rope(const Stream& s) {
    if (rope_.data() == nullptr) {
      const int T = config_.seq, D = config_.head_dim();
      rope_ = Tensor(alloc_, config_.stat_dtype(), {T, D / 2, 2}, MemCategory::workspace);
      ops::rope_table(rope_, T, D, config_.rope_theta, 0, s);
      s.synchronize();
    }
    return rope_;
  }
  // The packed q|k|v (B,T,Q) viewed per head (B,T,NH+2KV,D), and the heads that rotate (q's and k's).
  static Tensor per_head(const Tensor& qkv, const Dims& d) { return qkv.reshape({d.B, d.T, d.NH + 2 * d.KV, d.D}); }
  static int rotated(const Dims& d) { return int(d.NH + d.KV); }

  void forward_unit(Activations& base, int u, const Batch& batch, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<LlamaActivations&>(base);
    const Tensor p = access.params(u);
    if (u == 0) {
      PB_RANGE("forward embedding", Category::compute, {.layer = 0});
      acts.x[1] = embed(batch, param(p, 0, LlamaEmbeddingParam::wte), nullptr, s);
    } else if (u == head_unit()) {
      forward_head(acts, p, u, batch, s);
    } else {
      forward_block(acts, p, u, batch, s);
    }
  }

  void forward_head(LlamaActivations& acts, const Tensor& p, int u, const Batch& batch, const Stream& s) {
    const Dims d = dims(batch);
    PB_RANGE("forward head", Category::compute, {.layer = u});
    Tensor normf = sp_active() ? work(d.t, {d.B, d.Ts, d.C}) : act(d.t, {d.B, d.Ts, d.C});
    acts.rstdf = act(d.st, {d.B, d.Ts});
    acts.dlogits = act(d.t, {d.B, d.T, config_.vocab / config_.tp});
    acts.losses = work(d.st, {d.B, d.T});
    ops::rmsnorm_forward(normf, acts.rstdf, acts.x[std::size_t(u)], param(p, u, LlamaHeadParam::normw), s, eps());
    acts.normf = gather_seq(normf, d.B, true, s);
    ops::matmul_forward(acts.dlogits, acts.normf, param(p, u, LlamaHeadParam::lmw), nullptr, s);
    // The microbatch loss is the mean over its B*T tokens, weighted by dloss in the step's objective.
    loss_and_dlogits(acts.losses, acts.dlogits, batch, acts.dloss / float(d.B * d.T), s);
  }

  void forward_block(LlamaActivations& acts, const Tensor& p, int u, const Batch& batch, const Stream& s) {
    const Dims d = dims(batch);
    const Tensor& x = acts.x[std::size_t(u)];
    PB_RANGE("forward block", Category::compute, {.layer = u});
    LlamaBlockActivations& b = acts.blocks[std::size_t(u)];
    auto shard = [&] { return sp_active() ? work(d.t, {d.B, d.Ts, d.C}) : act(d.t, {d.B, d.Ts, d.C}); };
    Tensor n1 = shard(), n2 = shard();
    b.rstd1 = act(d.st, {d.B, d.Ts}), b.rstd2 = act(d.st, {d.B, d.Ts}), b.x2 = act(d.t, {d.B, d.Ts, d.C});
    b.qkv = act(d.t, {d.B, d.T, d.Q}), b.atty = act(d.t, {d.B, d.T, d.NH * d.D});
    b.gu = act(d.t, {d.B, d.T, 2 * d.F}), b.h = act(d.t, {d.B, d.T, d.F});
    Tensor proj = work(d.t, {d.B, d.T, d.C}), next = act(d.t, {d.B, d.Ts, d.C});
    // Attention branch.
    ops::rmsnorm_forward(n1, b.rstd1, x, param(p, u, LlamaBlockParam::attn_norm), s, eps());
    b.n1 = gather_seq(n1, d.B, true, s);
    ops::matmul_forward(b.qkv, b.n1, param(p, u, LlamaBlockParam::qkvw), nullptr, s);
    Tensor heads = per_head(b.qkv, d);
    ops::rope_forward(heads, heads, rope(s), s, rotated(d));
    if (config_.flash_attention) {
      b.att_or_lse = act(d.st, {d.B, d.NH, d.T});
      ops::flash_attention_forward(b.atty, b.att_or_lse, b.qkv, int(d.NH), s);
    } else {
      b.att_or_lse = act(d.st, {d.B, d.NH, d.T, d.T});
      ops::attention_forward(b.atty, b.att_or_lse, b.qkv, int(d.NH), s);
    }
    ops::matmul_forward(proj, b.atty, param(p, u, LlamaBlockParam::ow), nullptr, s);
    // x2 = x + o(...), n2 = rmsnorm(x2) in one pass; then the MLP branch.
    ops::rmsnorm_residual_forward(n2, b.x2, b.rstd2, x, reduce_seq(proj, d.B, s),
                                  param(p, u, LlamaBlockParam::mlp_norm), s, eps());
    b.n2 = gather_seq(n2, d.B, true, s);
    ops::matmul_forward(b.gu, b.n2, param(p, u, LlamaBlockParam::gate_upw), nullptr, s);
    ops::swiglu_forward(b.h, b.gu, s);
    ops::matmul_forward(proj, b.h, param(p, u, LlamaBlockParam::downw), nullptr, s);
    ops::residual_forward(next, b.x2, reduce_seq(proj, d.B, s), s);
    acts.x[std::size_t(u + 1)] = std::move(next);
  }

  // The head's input part writes the gradient at its input itself.
  void loss_backward(Activations&, const Batch&, Tensor&, const Stream&) override {}

  void backward_input_unit(Activations& base, int u, const Batch& batch, Tensor& dres, UnitAccess& access,
                           const Stream& s) override {
    auto& acts = static_cast<LlamaActivations&>(base);
    const Dims d = dims(batch);
    if (u == 0) {  // the embedding has no input gradient: keep the (full-sequence) gradient at its output
      acts.stash[0] = {gather_seq(dres, d.B, true, s)};
      return;
    }
    Tensor p = access.params(u), g = access.grads(u);
    Tensor dn = work(d.t, {d.B, d.T, d.C});
    if (u == head_unit()) {
      PB_RANGE("backward head", Category::compute, {.layer = u});
      Tensor dnormw = param(g, u, LlamaHeadParam::normw);
      ops::matmul_backward(&dn, nullptr, nullptr, acts.dlogits, acts.normf, param(p, u, LlamaHeadParam::lmw), false, s);
      Tensor dn_local = reduce_seq(dn, d.B, s);
      zero(dres, s);
      norm_backward({&dnormw}, [&](std::vector<Tensor>& dw) {
        ops::rmsnorm_backward(dres, dw[0], dn_local, acts.x[std::size_t(u)], param(p, u, LlamaHeadParam::normw),
                              acts.rstdf, s);
      }, s);
      return;
    }
    backward_block(acts, u, d, dres, p, g, dn, s);
  }

  // dres: the gradient at the block output x3 = x2 + down(...) on entry (this rank's shard under sp), at x on return.
  void backward_block(LlamaActivations& acts, int u, const Dims& d, Tensor& dres, const Tensor& p, const Tensor& g,
                      Tensor& dn, const Stream& s) {
    PB_RANGE("backward block", Category::compute, {.layer = u});
    LlamaBlockActivations& b = acts.blocks[std::size_t(u)];
    auto w = [&](LlamaBlockParam which) { return param(p, u, which); };
    Tensor dmlp_norm = param(g, u, LlamaBlockParam::mlp_norm), dattn_norm = param(g, u, LlamaBlockParam::attn_norm);
    // MLP branch: the row-parallel down projection needs the full sequence's output gradient.
    Tensor dx3 = sp_active() ? gather_seq(dres, d.B, true, s) : keep(dres, s);
    Tensor dh = work(d.t, {d.B, d.T, d.F}), dgu = act(d.t, {d.B, d.T, 2 * d.F});
    ops::matmul_backward(&dh, nullptr, nullptr, dx3, b.h, w(LlamaBlockParam::downw), false, s);
    ops::swiglu_backward(dgu, b.gu, dh, s);
    ops::matmul_backward(&dn, nullptr, nullptr, dgu, b.n2, w(LlamaBlockParam::gate_upw), false, s);
    Tensor dn2 = reduce_seq(dn, d.B, s);
    // The gradient at x2 (the residual stream's plus the norm's) goes both to x and to the o projection's output.
    Tensor dx = work(d.t, {d.B, d.Ts, d.C});
    Tensor dproj = sp_active() ? work(d.t, {d.B, d.Ts, d.C}) : act(d.t, {d.B, d.Ts, d.C});
    zero(dx, s);
    zero(dproj, s);
    norm_backward({&dmlp_norm}, [&](std::vector<Tensor>& dw) {
      ops::rmsnorm_residual_backward(dx, dproj, dw[0], dres, dn2, b.x2, w(LlamaBlockParam::mlp_norm), b.rstd2, s);
    }, s);
    // Attention branch: through o, attention and the rotation back to the unrotated q/k/v projection.
    Tensor dx2 = sp_active() ? gather_seq(dproj, d.B, true, s) : dproj;
    Tensor datty = work(d.t, {d.B, d.T, d.NH * d.D}), drot = work(d.t, {d.B, d.T, d.Q});
    Tensor dqkv = act(d.t, {d.B, d.T, d.Q});
    ops::matmul_backward(&datty, nullptr, nullptr, dx2, b.atty, w(LlamaBlockParam::ow), false, s);
    if (config_.flash_attention) {
      Tensor scratch = work(d.st, {d.B, d.NH, d.T});
      ops::flash_attention_backward(drot, scratch, datty, b.qkv, b.atty, b.att_or_lse, int(d.NH), s);
    } else {
      Tensor scratch = work(d.st, {d.B, d.NH, d.T, d.T});
      ops::attention_backward(drot, scratch, datty, b.qkv, b.att_or_lse, int(d.NH), s);
    }
    zero(dqkv, s);
    Tensor dqkv_heads = per_head(dqkv, d);
    ops::rope_backward(dqkv_heads, per_head(drot, d), rope(s), s, rotated(d));
    ops::matmul_backward(&dn, nullptr, nullptr, dqkv, b.n1, w(LlamaBlockParam::qkvw), false, s);
    Tensor dn1 = reduce_seq(dn, d.B, s);
    norm_backward({&dattn_norm}, [&](std::vector<Tensor>& dw) {
      ops::rmsnorm_backward(dx, dw[0], dn1, acts.x[std::size_t(u)], w(LlamaBlockParam::attn_norm), b.rstd1, s);
    }, s);
    dres = dx;
    acts.stash[std::size_t(u)] = {dx3, dgu, dx2, dqkv};
  }

  // No communication here: every tp rank's weight gradients are its own rows or columns (no replicated biases).
  void backward_weight_unit(Activations& base, int u, const Batch& batch, UnitAccess& access,
                            const Stream& s) override {
    auto& acts = static_cast<LlamaActivations&>(base);
    auto& stash = acts.stash[std::size_t(u)];
    Tensor g = access.grads(u);
    if (u == 0) {
      PB_RANGE("dW embedding", Category::compute, {.layer = 0});
      Tensor dwte = param(g, 0, LlamaEmbeddingParam::wte);  // the embedding backward needs no parameter values
      ops::encoder_backward_shard(dwte, nullptr, stash[0], batch.inputs, vocab_begin(), s);
    } else if (u == head_unit()) {
      PB_RANGE("dW head", Category::compute, {.layer = u});
      Tensor p = access.params(u), dlmw = param(g, u, LlamaHeadParam::lmw);
      ops::matmul_backward(nullptr, &dlmw, nullptr, acts.dlogits, acts.normf, param(p, u, LlamaHeadParam::lmw), true, s);
    } else {
      PB_RANGE("dW block", Category::compute, {.layer = u});
      const LlamaBlockActivations& b = acts.blocks[std::size_t(u)];
      Tensor p = access.params(u);
      auto linear = [&](LlamaBlockParam w, int dout, const Tensor& inp) {
        Tensor dw = param(g, u, w);
        ops::matmul_backward(nullptr, &dw, nullptr, stash[std::size_t(dout)], inp, param(p, u, w), true, s);
      };
      linear(LlamaBlockParam::downw, kLlamaDx3, b.h);
      linear(LlamaBlockParam::gate_upw, kLlamaDgu, b.n2);
      linear(LlamaBlockParam::ow, kLlamaDx2, b.atty);
      linear(LlamaBlockParam::qkvw, kLlamaDqkv, b.n1);
    }
    stash.clear();
  }

  Tensor rope_;
};

}  // namespace

std::unique_ptr<Model> make_llama(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp) {
  return std::make_unique<Llama>(config, alloc, tp);
}

}  // namespace parbench
