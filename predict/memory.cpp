// Memory per category of a pipeline stage's GPU.
#include "predict/memory.h"

#include "base/dtype.h"
#include "parallel/plan/plan.h"
#include "predict/costs.h"

namespace parbench::predict {

namespace {
// Korthikanti et al. (2022), bytes per block for 16-bit activations: s b h (10 + 24/t + 5 a s / (h t)) with tensor
// parallelism, (s b h / t)(34 + 5 a s / h) with sequence parallelism as well. Flash attention keeps no (s, s) scores.
// llama, counted the same way (16-bit, no dropout, flash or not): replicated, the two RMSNorms' inputs and the q/k/v
// and gate/up GEMMs' inputs, 8 s b h; split over t, q, k and v (2 + 4 g, g = kv_heads / heads), the output
// projection's input (2), gate, up and their product (6 f / h), and without flash the softmax output 2 a s^2 b.
double llama_stored_bytes(const Layout& l, bool keep_attention_scores) {
  const double s = l.model.seq, b = l.micro_batch, h = l.model.hidden, a = l.model.heads, t = l.tp;
  const double g = double(l.model.kv_head_count()) / a, f = l.model.ffn_dim();
  const double scores = keep_attention_scores && !l.model.flash_attention ? 2 * a * s / h : 0;
  const double split = 4 + 4 * g + 6 * f / h + scores;
  const double per16 = l.sequence_parallel ? s * b * h / t * (8 + split) : s * b * h * (8 + split / t);
  return per16 * double(dtype_size(l.model.dtype)) / 2;
}

double stored_bytes(const Layout& l, bool keep_attention_scores) {
  if (l.model.kind == ModelKind::llama) return llama_stored_bytes(l, keep_attention_scores);
  const double s = l.model.seq, b = l.micro_batch, h = l.model.hidden, a = l.model.heads, t = l.tp;
  const double scores = keep_attention_scores && !l.model.flash_attention ? 5 * a * s / h : 0;
  const double per16 = l.sequence_parallel ? s * b * h / t * (34 + scores) : s * b * h * (10 + 24 / t + scores / t);
  return per16 * double(dtype_size(l.model.dtype)) / 2;
}
}  // namespace

double block_activation_bytes(const Layout& l) {
  switch (l.recompute) {
    case Recompute::none: return stored_bytes(l, true);
    case Recompute::selective: return stored_bytes(l, false);
    case Recompute::full: {  // only the block's input, 2 s b h (a 1/t share under sequence parallelism)
      const double s = l.model.seq, b = l.micro_batch, h = l.model.hidden;
      return s * b * h * double(dtype_size(l.model.dtype)) / (l.sequence_parallel ? l.tp : 1);
    }
  }
  return 0;
}

MemSplit stage_memory(const Layout& l, int stage, int in_flight, double psi) {
  const OptimizerKind optimizer = l.adamw ? OptimizerKind::adamw : OptimizerKind::sgd;
  MemSplit m = zero_closed_form(l.model.dtype, optimizer, std::int64_t(psi), l.dp, l.zero_stage);
  // Gradients in the type the data-parallel reduction moves: Megatron's fp32 gradient buffer replaces the 16-bit
  // gradients; DeepSpeed's bf16 optimizer keeps its fp32 copy beside them (unsharded: its own ZeRO-1).
  const double p = double(dtype_size(l.model.dtype)), g = gradient_bytes(l);
  if (g != p) {
    double grads = (l.zero_stage >= 2 ? psi / l.dp : psi) * g;
    if (l.dp_reduce == DpReduce::fp32_allreduce) grads += psi * p;
    m[int(MemCategory::gradients)] = std::size_t(grads);
  }
  const int chunks = l.pp * l.virtual_stages;
  const double blocks_per_chunk = stage_block_count(l, stage) / l.virtual_stages;
  double acts = in_flight * blocks_per_chunk * block_activation_bytes(l);
  // Full recomputation rebuilds one block's whole activations at a time during the backward.
  if (l.recompute == Recompute::full) {
    Layout none = l;
    none.recompute = Recompute::none;
    acts += block_activation_bytes(none);
  }
  m[int(MemCategory::activations)] = std::size_t(acts);
  // The last stage's fp32 logits and their gradient, (b, s, V/t) each.
  const bool last = stage == (chunks - 1) % l.pp;
  const double tokens = double(l.micro_batch) * l.model.seq;
  if (last) m[int(MemCategory::workspace)] = std::size_t(2 * tokens * l.model.vocab / l.tp * 4);
  // ZeRO-3 gathers a unit ahead: two blocks' full parameters at a time.
  if (l.zero_stage >= 3 && l.dp > 1)
    m[int(MemCategory::communication)] = std::size_t(2 * psi / std::max(1.0, blocks_per_chunk * l.virtual_stages) *
                                                   double(dtype_size(l.model.dtype)));
  return m;
}

}  // namespace parbench::predict
