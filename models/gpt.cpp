// GPT-style decoder: token + position embeddings, L pre-LN blocks of causal attention and MLP with residuals,
// a final layernorm, an untied LM head and the fused softmax cross-entropy (llm.c's layer order).
// Units: 0 the embedding, 1..L the blocks, L+1 the head.
// Tensor parallelism (Megatron): each tp rank runs NH/tp heads and F/tp MLP columns (qkv and fc column-parallel,
// proj and fcproj row-parallel, an allreduce after each row-parallel matmul in forward and before each layernorm
// backward), the embedding and the LM head split over the vocabulary (the cross-entropy combines row statistics
// instead of gathering logits). Sequence parallelism keeps the layernorms, residuals and boundaries on a T/tp shard:
// all-gather before the column-parallel matmuls, reduce-scatter after the row-parallel ones; the head gathers the
// final layernorm's output and computes the cross-entropy over the whole sequence (every rank gets all B*T losses).
// The gathered layernorm outputs are kept for the weight gradients (not gathered again in backward, as Megatron
// does): (B,T,C) twice per block more activation memory than the T/tp shards, no extra traffic.
#include <vector>

#include "core/memory.h"
#include "kernels/ops.h"
#include "models/decoder.h"
#include "profiles/range.h"

namespace parbench {

namespace {

// ln1, ln2 are the full-sequence layernorm outputs the column-parallel matmuls read (gathered under sp).
struct BlockActivations {
  Tensor ln1, mean1, rstd1, qkv, atty, att_or_lse, x2, ln2, mean2, rstd2, fch, fch_gelu;
};

// Indices into Activations::stash[u] of a block: the output gradients of its four matmuls.
enum GptStash { kDx3, kDfch, kDx2, kDqkv };

struct GptActivations : Activations {
  std::vector<BlockActivations> blocks;  // [unit]
  // lnf: the head's full-sequence layernorm output; dlogits (B,T,V/tp): the fused loss gradient, made in forward.
  Tensor lnf, meanf, rstdf, dlogits;
};

class Gpt : public Decoder {
 public:
  Gpt(const ModelConfig& c, TrackedAllocator& a, TensorParallel* tp) : Decoder(c, a, tp) {}

 private:
  std::unique_ptr<Activations> new_activations() const override {
    auto a = std::make_unique<GptActivations>();
    a->blocks.resize(std::size_t(config_.layers + 2));
    return a;
  }

  void layernorm_backward(Tensor& dres, Tensor& dw, Tensor& db, const Tensor& dln, const Tensor& x, const Tensor& w,
                          const Tensor& mean, const Tensor& rstd, const Stream& s) const {
    norm_backward({&dw, &db}, [&](std::vector<Tensor>& g) {
      ops::layernorm_backward(dres, g[0], g[1], dln, x, w, mean, rstd, s);
    }, s);
  }

  // A microbatch's sizes on this rank: tensor parallelism splits heads, ffn and vocabulary (n ranks), sequence
  // parallelism the sequence (Ts) outside attention and the MLP.
  struct Dims {
    std::int64_t B, T, Ts, C, F, V, NH, Ch;
    DType t, st;  // storage and statistics
  };
  Dims dims(const Batch& batch) const {
    const int n = config_.tp;
    return {batch.samples, config_.seq, config_.local_seq(), config_.hidden, config_.ffn_dim() / n,
            config_.vocab / n, config_.heads / n, config_.hidden / n, config_.dtype, config_.stat_dtype()};
  }

  void forward_unit(Activations& base, int u, const Batch& batch, UnitAccess& access, const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    const Tensor p = access.params(u);
    if (u == 0) forward_embedding(acts, p, batch, s);
    else if (u == head_unit()) forward_head(acts, p, u, batch, s);
    else forward_block(acts, p, u, batch, s);
  }

  void forward_embedding(GptActivations& acts, const Tensor& p, const Batch& batch, const Stream& s) {
    PB_RANGE("forward embedding", Category::compute, {.layer = 0});
    const Tensor wpe = param(p, 0, EmbeddingParam::wpe);
    acts.x[1] = embed(batch, param(p, 0, EmbeddingParam::wte), &wpe, s);
  }

  void forward_head(GptActivations& acts, const Tensor& p, int u, const Batch& batch, const Stream& s) {
    const auto [B, T, Ts, C, F, V, NH, Ch, t, st] = dims(batch);
    const Tensor& x = acts.x[std::size_t(u)];
    PB_RANGE("forward head", Category::compute, {.layer = u});
    Tensor lnf = sp_active() ? work(t, {B, Ts, C}) : act(t, {B, Ts, C});
    acts.meanf = act(st, {B, Ts}), acts.rstdf = act(st, {B, Ts});
    acts.dlogits = act(t, {B, T, V});
    acts.losses = work(st, {B, T});
    ops::layernorm_forward(lnf, acts.meanf, acts.rstdf, x, param(p, u, HeadParam::lnfw), param(p, u, HeadParam::lnfb), s);
    acts.lnf = gather_seq(lnf, B, true, s);
    ops::matmul_forward(acts.dlogits, acts.lnf, param(p, u, HeadParam::lmw), nullptr, s);
    // The microbatch loss is the mean over its B*T tokens, weighted by dloss in the step's objective.
    loss_and_dlogits(acts.losses, acts.dlogits, batch, acts.dloss / float(B * T), s);
  }

  void forward_block(GptActivations& acts, const Tensor& p, int u, const Batch& batch, const Stream& s) {
    const auto [B, T, Ts, C, F, V, NH, Ch, t, st] = dims(batch);
    const Tensor& x = acts.x[std::size_t(u)];
    PB_RANGE("forward block", Category::compute, {.layer = u});
    BlockActivations& b = acts.blocks[std::size_t(u)];
    Tensor ln1 = sp_active() ? work(t, {B, Ts, C}) : act(t, {B, Ts, C});
    Tensor ln2 = sp_active() ? work(t, {B, Ts, C}) : act(t, {B, Ts, C});
    b.mean1 = act(st, {B, Ts}), b.rstd1 = act(st, {B, Ts});
    b.qkv = act(t, {B, T, 3 * Ch}), b.atty = act(t, {B, T, Ch}), b.x2 = act(t, {B, Ts, C});
    b.mean2 = act(st, {B, Ts}), b.rstd2 = act(st, {B, Ts});
    b.fch = act(t, {B, T, F}), b.fch_gelu = act(t, {B, T, F});
    Tensor proj = work(t, {B, T, C}), next = act(t, {B, Ts, C});
    ops::layernorm_forward(ln1, b.mean1, b.rstd1, x, param(p, u, BlockParam::ln1w), param(p, u, BlockParam::ln1b), s);
    b.ln1 = gather_seq(ln1, B, true, s);
    Tensor qkvb = param(p, u, BlockParam::qkvb), projb = param(p, u, BlockParam::projb);
    Tensor fcb = param(p, u, BlockParam::fcb), fcprojb = param(p, u, BlockParam::fcprojb);
    ops::matmul_forward(b.qkv, b.ln1, param(p, u, BlockParam::qkvw), &qkvb, s);
    if (config_.flash_attention) {
      b.att_or_lse = act(st, {B, NH, T});
      ops::flash_attention_forward(b.atty, b.att_or_lse, b.qkv, int(NH), s);
    } else {
      b.att_or_lse = act(st, {B, NH, T, T});
      ops::attention_forward(b.atty, b.att_or_lse, b.qkv, int(NH), s);
    }
    ops::matmul_forward(proj, b.atty, param(p, u, BlockParam::projw), row_bias(projb), s);
    ops::residual_forward(b.x2, x, reduce_seq(proj, B, s), s);
    ops::layernorm_forward(ln2, b.mean2, b.rstd2, b.x2, param(p, u, BlockParam::ln2w), param(p, u, BlockParam::ln2b), s);
    b.ln2 = gather_seq(ln2, B, true, s);
    ops::matmul_forward(b.fch, b.ln2, param(p, u, BlockParam::fcw), &fcb, s);
    ops::gelu_forward(b.fch_gelu, b.fch, s);
    ops::matmul_forward(proj, b.fch_gelu, param(p, u, BlockParam::fcprojw), row_bias(fcprojb), s);
    ops::residual_forward(next, b.x2, reduce_seq(proj, B, s), s);
    acts.x[std::size_t(u + 1)] = std::move(next);
  }

  // The head's input part writes the gradient at its input itself.
  void loss_backward(Activations&, const Batch&, Tensor&, const Stream&) override {}

  void backward_input_unit(Activations& base, int u, const Batch& batch, Tensor& dres, UnitAccess& access,
                           const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    const int n = config_.tp;
    const std::int64_t B = batch.samples, T = config_.seq, C = config_.hidden, F = config_.ffn_dim() / n,
                       NH = config_.heads / n, Ch = C / n;
    const DType t = config_.dtype, st = config_.stat_dtype();
    auto& stash = acts.stash[std::size_t(u)];
    if (u == 0) {  // the embedding has no input gradient: keep the (full-sequence) gradient at its output
      stash = {gather_seq(dres, B, true, s)};
      return;
    }
    Tensor p = access.params(u), g = access.grads(u);
    Tensor dln = work(t, {B, T, C});
    if (u == head_unit()) {
      PB_RANGE("backward head", Category::compute, {.layer = u});
      Tensor dlnfw = param(g, u, HeadParam::lnfw), dlnfb = param(g, u, HeadParam::lnfb);
      zero(dln, s);
      ops::matmul_backward(&dln, nullptr, nullptr, acts.dlogits, acts.lnf, param(p, u, HeadParam::lmw), true, s);
      Tensor dln_local = reduce_seq(dln, B, s);
      zero(dres, s);
      layernorm_backward(dres, dlnfw, dlnfb, dln_local, acts.x[std::size_t(u)], param(p, u, HeadParam::lnfw), acts.meanf,
                         acts.rstdf, s);
      return;
    }
    PB_RANGE("backward block", Category::compute, {.layer = u});
    BlockActivations& b = acts.blocks[std::size_t(u)];
    Tensor dln2w = param(g, u, BlockParam::ln2w), dln2b = param(g, u, BlockParam::ln2b);
    Tensor dln1w = param(g, u, BlockParam::ln1w), dln1b = param(g, u, BlockParam::ln1b);
    Tensor dfch = act(t, {B, T, F}), dqkv = act(t, {B, T, 3 * Ch}), datty = work(t, {B, T, Ch});
    Tensor scratch = config_.flash_attention ? work(st, {B, NH, T}) : work(st, {B, NH, T, T});
    // MLP branch: dres holds the gradient at the block output x3 = x2 + fcproj(...) (this rank's shard under sp;
    // dx3 is then the full sequence's, which the row-parallel fcproj needs).
    Tensor dx3 = sp_active() ? gather_seq(dres, B, true, s) : keep(dres, s);
    zero(dfch, s);
    ops::matmul_backward(&dfch, nullptr, nullptr, dx3, b.fch_gelu, param(p, u, BlockParam::fcprojw), true, s);
    ops::gelu_backward(dfch, b.fch, dfch, s);
    zero(dln, s);
    ops::matmul_backward(&dln, nullptr, nullptr, dfch, b.ln2, param(p, u, BlockParam::fcw), true, s);
    layernorm_backward(dres, dln2w, dln2b, reduce_seq(dln, B, s), b.x2, param(p, u, BlockParam::ln2w), b.mean2, b.rstd2, s);
    // Attention branch: dres now holds the gradient at x2 = x + proj(attention(...)).
    Tensor dx2 = sp_active() ? gather_seq(dres, B, true, s) : keep(dres, s);
    zero(datty, s);
    ops::matmul_backward(&datty, nullptr, nullptr, dx2, b.atty, param(p, u, BlockParam::projw), true, s);
    if (config_.flash_attention)
      ops::flash_attention_backward(dqkv, scratch, datty, b.qkv, b.atty, b.att_or_lse, int(NH), s);
    else
      ops::attention_backward(dqkv, scratch, datty, b.qkv, b.att_or_lse, int(NH), s);
    zero(dln, s);
    ops::matmul_backward(&dln, nullptr, nullptr, dqkv, b.ln1, param(p, u, BlockParam::qkvw), true, s);
    layernorm_backward(dres, dln1w, dln1b, reduce_seq(dln, B, s), acts.x[std::size_t(u)], param(p, u, BlockParam::ln1w),
                       b.mean1, b.rstd1, s);
    stash = {dx3, dfch, dx2, dqkv};
  }

  // No communication here: row-parallel bias gradients come from the full-sequence output gradients, which are the
  // same on every tp rank, so the replicated biases get identical gradients.
  void backward_weight_unit(Activations& base, int u, const Batch& batch, UnitAccess& access,
                            const Stream& s) override {
    auto& acts = static_cast<GptActivations&>(base);
    auto& stash = acts.stash[std::size_t(u)];
    Tensor g = access.grads(u);
    auto grad = [&](auto handle) { return param(g, u, handle); };
    if (u == 0) {
      PB_RANGE("dW embedding", Category::compute, {.layer = 0});
      Tensor dwte = grad(EmbeddingParam::wte), dwpe = grad(EmbeddingParam::wpe);  // the embedding backward needs no parameter values
      ops::encoder_backward_shard(dwte, &dwpe, stash[0], batch.inputs, vocab_begin(), s);
    } else if (u == head_unit()) {
      PB_RANGE("dW head", Category::compute, {.layer = u});
      Tensor p = access.params(u), dlmw = grad(HeadParam::lmw);
      ops::matmul_backward(nullptr, &dlmw, nullptr, acts.dlogits, acts.lnf, param(p, u, HeadParam::lmw), true, s);
    } else {
      PB_RANGE("dW block", Category::compute, {.layer = u});
      const BlockActivations& b = acts.blocks[std::size_t(u)];
      Tensor p = access.params(u);
      auto linear = [&](BlockParam w, BlockParam bias, int dout, const Tensor& inp) {
        Tensor dw = grad(w), db = grad(bias);
        ops::matmul_backward(nullptr, &dw, &db, stash[std::size_t(dout)], inp, param(p, u, w), true, s);
      };
      linear(BlockParam::fcprojw, BlockParam::fcprojb, kDx3, b.fch_gelu);
      linear(BlockParam::fcw, BlockParam::fcb, kDfch, b.ln2);
      linear(BlockParam::projw, BlockParam::projb, kDx2, b.atty);
      linear(BlockParam::qkvw, BlockParam::qkvb, kDqkv, b.ln1);
    }
    stash.clear();
  }
};

}  // namespace

std::unique_ptr<Model> make_gpt(const ModelConfig& config, TrackedAllocator& alloc, TensorParallel* tp) {
  return std::make_unique<Gpt>(config, alloc, tp);
}

}  // namespace parbench
