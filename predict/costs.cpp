// Layer costs: matrix multiplications at the system's matrix efficiency, elementwise work by bytes moved (the
// activation list of Korthikanti et al. 2022), tensor-parallel collectives from the collective model.
#include "predict/costs.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "parallel/plan/plan.h"
#include "predict/collective_model.h"

namespace parbench::predict {

PassCosts& PassCosts::operator+=(const PassCosts& o) {
  forward += o.forward, forward_tp += o.forward_tp, backward_input += o.backward_input;
  backward_weight += o.backward_weight, backward_tp += o.backward_tp, recompute += o.recompute;
  recompute_tp += o.recompute_tp, zero3_forward += o.zero3_forward, zero3_backward += o.zero3_backward;
  return *this;
}

PassCosts PassCosts::times(double k) const {
  PassCosts c = *this;
  for (double* x : {&c.forward, &c.forward_tp, &c.backward_input, &c.backward_weight, &c.backward_tp, &c.recompute,
                    &c.recompute_tp, &c.zero3_forward, &c.zero3_backward})
    *x *= k;
  return c;
}

double memory_seconds(const SystemModel& sys, double bytes) {
  if (bytes <= 0) return 0;
  return bytes / (sys.gpu.hbm_gbps * 1e9 * sys.gpu.hbm_efficiency.at(bytes));
}

double measured_rate_seconds(const SystemModel& sys, double bytes, double gbps) {
  if (bytes <= 0) return 0;
  return gbps > 0 ? bytes / (gbps * 1e9) : memory_seconds(sys, bytes);
}

double gemm_seconds(const SystemModel& sys, double batch, double m, double n, double k, int dtype_bytes,
                    GemmKind kind) {
  const double flops = 2 * batch * m * n * k, bytes = batch * (m * k + k * n + m * n) * dtype_bytes;
  if (flops <= 0) return 0;
  const GpuModel& g = sys.gpu;
  const GemmCurvesByK& by_k = g.matrix_efficiency_by_k;
  const double efficiency = by_k.empty()                         ? g.matrix_efficiency.at(flops / 1e9)
                            : kind == GemmKind::input_gradient  ? by_k.input_gradient.at(k)
                            : kind == GemmKind::weight_gradient ? by_k.weight_gradient.at(k)
                                                                : by_k.forward.at(k);
  const double compute = flops / (sys.matrix_tflops(dtype_bytes) * 1e12 * efficiency);
  const double memory = memory_seconds(sys, bytes);
  return g.processing == Processing::no_overlap ? compute + memory : std::max(compute, memory);
}

LinearSeconds linear_seconds(const SystemModel& sys, double tokens, double in, double out, int dtype_bytes) {
  for (const MeasuredLinear& m : sys.gpu.measured_linears)
    if (m.measures(tokens, in, out, dtype_bytes))
      return {m.forward_s, m.input_gradient_s, m.weight_gradient_s};
  return {gemm_seconds(sys, 1, tokens, out, in, dtype_bytes),
          gemm_seconds(sys, 1, tokens, in, out, dtype_bytes, GemmKind::input_gradient),
          gemm_seconds(sys, 1, out, in, tokens, dtype_bytes, GemmKind::weight_gradient)};
}

LinearSeconds linear_seconds(const SystemModel& sys, const LinearDims& d, int dtype_bytes) {
  return linear_seconds(sys, d.tokens, d.in, d.out, dtype_bytes);
}

LayoutLinears layout_linears(const Layout& l) {
  const double tokens = double(l.micro_batch) * l.model.seq, h = l.model.hidden, f = l.model.ffn_dim(), t = l.tp;
  const double fc_rows = l.model.kind == ModelKind::llama ? 2 * f : f;  // SwiGLU's gate and up in one GEMM
  return {{tokens, h, l.model.qkv_rows() / t}, {tokens, h / t, h}, {tokens, h, fc_rows / t}, {tokens, f / t, h},
          {tokens, h, l.model.vocab / t}};
}

AttentionDims layout_attention(const Layout& l) {
  return {double(l.micro_batch), double(l.model.heads) / l.tp, double(l.model.seq),
          double(l.model.hidden) / l.model.heads};
}

namespace {

int dtype_bytes(const Layout& l) { return int(dtype_size(l.model.dtype)); }

// Ops per microbatch, as the GPT of models/gpt.cpp calls them (without tensor-parallel communication, which the
// collective model times). A block's forward: two layernorms, four weight matmuls, attention, GeLU and two residual
// adds; its input gradient: four matmuls, GeLU, attention and two layernorm backwards, and the four gradient
// buffers zeroed before accumulation; its weight gradient: four matmuls. The embedding: one lookup, one gradient
// scatter. The head: layernorm, logits matmul and the loss (its gradient included) forward; zeroing, matmul,
// zeroing and layernorm backward for the input gradient; the logits' weight-gradient matmul.
struct OpCounts {
  int forward, backward_input, backward_weight;
};
constexpr OpCounts kBlockOps{10, 12, 4}, kEmbeddingOps{1, 0, 1}, kHeadOps{3, 4, 1};

// The ops' fixed cost (the system's per-op overhead) added to a pass's compute.
void add_op_overhead(PassCosts& c, const SystemModel& sys, const OpCounts& n) {
  const double each = sys.gpu.op_overhead_s;
  c.forward += n.forward * each, c.backward_input += n.backward_input * each;
  c.backward_weight += n.backward_weight * each;
}

// Tied without a pipeline the head has no weight of its own: the embedding's serves it.
bool head_shares_embedding(const Layout& l) { return l.tied_embeddings && l.pp == 1; }

// A unit's parameter tensors on one GPU (elements), as make_layout lists them (with one block: the embedding, the
// block, the head) for the layout's tensor parallelism.
enum class Unit { embedding, block, head };
std::vector<double> unit_tensors(const Layout& l, Unit unit) {
  ModelConfig m = l.model;
  m.tp = l.tp, m.layers = 1;
  const ParamLayout layout = make_layout(m);
  std::vector<double> n;
  for (const ParamSpec& spec : layout.units.at(std::size_t(unit)).params) n.push_back(double(shape_numel(spec.shape)));
  if (unit == Unit::head && head_shares_embedding(l)) n.pop_back();
  return n;
}

// One microbatch's gradient accumulation over a unit's tensors (Layout::grad_accumulation): each tensor's kernels
// by their bytes at the HBM rate, plus the per-op overhead. PyTorch's accumulation has nothing to add to on the first
// microbatch, so each microbatch carries (m - 1) / m of it.
double accumulation_seconds(const Layout& l, const SystemModel& sys, Unit unit) {
  if (l.grad_accumulation == GradAccumulation::fused) return 0;
  const double p = dtype_bytes(l), m = l.microbatches(), each = sys.gpu.op_overhead_s;
  const bool autograd = l.grad_accumulation == GradAccumulation::autograd;
  double t = 0;
  for (double n : unit_tensors(l, unit))
    t += autograd ? memory_seconds(sys, 3 * p * n) + each
                  : memory_seconds(sys, (p + 4) * n) + memory_seconds(sys, 12 * n) + 2 * each;
  return autograd ? t * (m - 1) / m : t;
}

}  // namespace

double activation_bytes(const Layout& l) {
  return double(l.micro_batch) * l.model.seq * l.model.hidden * dtype_bytes(l);
}

double gradient_bytes(const Layout& l) {
  const double p = dtype_bytes(l);
  return l.dp_reduce == DpReduce::fp32 || l.dp_reduce == DpReduce::fp32_allreduce ? std::max(4.0, p) : p;
}

namespace {

// The tensor-parallel collectives around one parallel region (attention or MLP) in one direction: an allreduce of
// the (b, s, h) activation, or with sequence parallelism an all-gather before and a reduce-scatter after.
double tp_region_seconds(const Layout& l, const SystemModel& sys) {
  if (l.tp <= 1) return 0;
  const double bytes = activation_bytes(l);
  const GroupPlacement g = place_group(sys, l.tp, 1);
  if (!l.sequence_parallel) return collective_cost(sys, Collective::allreduce, bytes, g).seconds;
  return collective_cost(sys, Collective::allgather, bytes, g).seconds +
         collective_cost(sys, Collective::reduce_scatter, bytes, g).seconds;
}

// Attention core: flash attention's measured times where the system has this shape (b samples, a/t heads, s, h/a),
// else the batched matmuls and, without flash attention, the softmax, mask and dropout on the (a/t, s, s) scores
// (Korthikanti's 5 a s^2 b bytes of activations; read and written: 9 bytes per score), forward and backward.
struct AttentionSeconds {
  double forward = 0, backward = 0;
};
AttentionSeconds attention_core_seconds(const Layout& l, const SystemModel& sys) {
  const double b = l.micro_batch, s = l.model.seq, h = l.model.hidden, a = l.model.heads, t = l.tp;
  const int p = dtype_bytes(l);
  // Per head, d = h / a: the scores Q K^T (s x d by d x s, k = d) and the weighted sum P V (s x s by s x d, k = s);
  // with d near 128 they move as many bytes as they compute (the roofline's memory side). Backward: dP = dO V^T
  // (k = d), and dV = P^T dO, dQ = dS K, dK = dS^T Q (k = s each).
  const double heads = b * a / t, d = h / a;
  if (l.model.flash_attention) {
    const AttentionDims at = layout_attention(l);
    for (const MeasuredAttention& m : sys.gpu.measured_attention)
      if (m.measures(at.batch, at.heads, at.seq, at.head_dim, p)) return {m.forward_s, m.backward_s};
  }
  const double short_k = gemm_seconds(sys, heads, s, s, d, p), long_k = gemm_seconds(sys, heads, s, d, s, p);
  AttentionSeconds c{short_k + long_k, short_k + 3 * long_k};
  if (l.model.flash_attention) return c;
  const double elementwise = memory_seconds(sys, 4.5 * (a / t * s * s * b) * p);
  c.forward += elementwise, c.backward += 2 * elementwise;
  return c;
}

// Transformer Engine's userbuffers as NeMo's GPT-3 175B configuration sets them (NVIDIA/dgxc-benchmarking,
// gpt3_175b_hydra.yaml: ub_tp_comm_overlap_cfg). An all-gather that feeds a GEMM goes round the ring a tp-th of the
// tokens at a time, each piece's GEMM running while the next piece travels (`ring_exchange`: the forward's qkv and
// fc1, the backward's input gradients of proj and fc2); the reduce-scatter after a row-parallel forward GEMM is
// split with it in kUserbufferSplits parts, each part reduced while the next part's GEMM runs on the SMs the
// reduce-scatter leaves (`pipeline` with set_sm_margin: 24 SMs after proj, 20 after fc2). A piece's GEMM is the
// system's measured linear of that shape where it has one (predict_validate --list-linears names the pieces), else
// its share of the whole GEMM's time (the size curve under `no_overlap` would charge each piece the whole weight's
// read again).
constexpr int kUserbufferSplits = 4, kProjCommSms = 24, kFc2CommSms = 20;

// The linear `d` (unsplit: `whole`) over a `parts`-th of its tokens, as above.
LinearSeconds piece_seconds(const SystemModel& sys, const LinearDims& d, const LinearSeconds& whole, int parts,
                            int dtype_bytes) {
  for (const MeasuredLinear& m : sys.gpu.measured_linears)
    if (m.measures(d.tokens / parts, d.in, d.out, dtype_bytes))
      return {m.forward_s, m.input_gradient_s, m.weight_gradient_s};
  return {whole.forward / parts, whole.input_gradient / parts, whole.weight_gradient / parts};
}

// What a ring-exchanged all-gather adds to the GEMM it feeds (the linear `d`'s forward or input gradient, unsplit
// `whole`): t pieces' GEMMs, the first t - 1 each beside one piece's send, less the unsplit GEMM's time.
double ring_exposed_seconds(const Layout& l, const SystemModel& sys, const LinearDims& d, const LinearSeconds& whole,
                            bool input_gradient) {
  const int t = l.tp;
  const double send =
      collective_cost(sys, Collective::allgather, activation_bytes(l), place_group(sys, t, 1)).seconds / (t - 1);
  const LinearSeconds piece = piece_seconds(sys, d, whole, t, dtype_bytes(l));
  const double gemm = input_gradient ? whole.input_gradient : whole.forward;
  const double piece_gemm = input_gradient ? piece.input_gradient : piece.forward;
  return std::max(0.0, (t - 1) * std::max(piece_gemm, send) + piece_gemm - gemm);
}

// What the pipelined reduce-scatter adds to the row-parallel linear `d`'s forward (unsplit `whole`): n parts of the
// GEMM, slowed to the sms - comm_sms SMs left to them, each part's reduce-scatter beside the next part's GEMM, the
// last one's after.
double pipelined_exposed_seconds(const Layout& l, const SystemModel& sys, const LinearDims& d,
                                 const LinearSeconds& whole, int comm_sms) {
  const int sms = sys.gpu.sms, n = kUserbufferSplits;
  if (sms <= comm_sms)
    throw UsageError("--tp-userbuffers needs the GPU's streaming multiprocessors (gpu.sms, more than " +
                     std::to_string(comm_sms) + "); system " + sys.name + " gives " + std::to_string(sms));
  const double scatter =
      collective_cost(sys, Collective::reduce_scatter, activation_bytes(l) / n, place_group(sys, l.tp, 1)).seconds;
  const double part = piece_seconds(sys, d, whole, n, dtype_bytes(l)).forward * sms / (sms - comm_sms);
  return part + (n - 1) * std::max(part, scatter) + scatter - whole.forward;
}

// A block's four weight GEMMs' unsplit times, in layout_linears' order: qkv, projection, fc, fc projection.
using BlockLinearSeconds = std::array<LinearSeconds, 4>;

// The forward's tensor-parallel communication of a block, exposed: per region (attention, MLP) an allreduce, or
// with sequence parallelism an all-gather and a reduce-scatter, or what userbuffers leave of those.
double forward_tp_seconds(const Layout& l, const SystemModel& sys, const LayoutLinears& d,
                          const BlockLinearSeconds& s) {
  if (l.tp <= 1 || !l.tp_userbuffers) return 2 * tp_region_seconds(l, sys);
  const double attention =
      ring_exposed_seconds(l, sys, d.qkv, s[0], false) + pipelined_exposed_seconds(l, sys, d.proj, s[1], kProjCommSms);
  const double mlp =
      ring_exposed_seconds(l, sys, d.fc, s[2], false) + pipelined_exposed_seconds(l, sys, d.fc_proj, s[3], kFc2CommSms);
  return attention + mlp;
}

// The tensor-parallel communication of a block's backward: per region (attention, MLP) the row-parallel output's
// gradient collective (allreduce's backward is nothing; reduce-scatter's is an all-gather, ring-exchanged with that
// linear's input-gradient GEMM under userbuffers), and at the column-parallel input the input gradient's allreduce
// (or reduce-scatter), plus sequence parallelism's all-gather of the input again. With the overlap the
// column-parallel ones run beside that linear's weight-gradient GEMM (qkv's, fc's), so only what exceeds the GEMM is
// exposed.
double backward_tp_seconds(const Layout& l, const SystemModel& sys, const LayoutLinears& d,
                           const BlockLinearSeconds& s) {
  if (l.tp <= 1) return 0;
  const std::array<double, 2> column_gemm = {s[0].weight_gradient, s[2].weight_gradient};
  const double bytes = activation_bytes(l);
  const GroupPlacement g = place_group(sys, l.tp, 1);
  const bool split = l.pp > 1 && (!l.schedule.kind || l.schedule.kind->split_backward);
  const bool overlap = l.tp_backward_overlap && !split;
  auto exposed = [&](double comm, double gemm) { return overlap ? std::max(0.0, comm - gemm) : comm; };
  double t = 0;
  if (!l.sequence_parallel) {
    const double allreduce = collective_cost(sys, Collective::allreduce, bytes, g).seconds;
    for (double gemm : column_gemm) t += exposed(allreduce, gemm);
    return t;
  }
  const double gather = collective_cost(sys, Collective::allgather, bytes, g).seconds;
  const double scatter = collective_cost(sys, Collective::reduce_scatter, bytes, g).seconds;
  std::array<double, 2> row_gather = {gather, gather};
  if (l.tp_userbuffers)
    row_gather = {ring_exposed_seconds(l, sys, d.proj, s[1], true),
                  ring_exposed_seconds(l, sys, d.fc_proj, s[3], true)};
  for (std::size_t region = 0; region < 2; ++region) {
    const double gemm = column_gemm[region];
    t += row_gather[region] + exposed(scatter, gemm) + (l.sp_backward_regather ? exposed(gather, gemm) : 0);
  }
  return t;
}

}  // namespace

std::vector<LinearDims> userbuffer_pieces(const Layout& l) {
  if (!l.tp_userbuffers || l.tp <= 1) return {};
  const LayoutLinears d = layout_linears(l);
  const double t = l.tp, n = kUserbufferSplits;
  return {{d.qkv.tokens / t, d.qkv.in, d.qkv.out},    {d.fc.tokens / t, d.fc.in, d.fc.out},
          {d.proj.tokens / t, d.proj.in, d.proj.out}, {d.fc_proj.tokens / t, d.fc_proj.in, d.fc_proj.out},
          {d.proj.tokens / n, d.proj.in, d.proj.out}, {d.fc_proj.tokens / n, d.fc_proj.in, d.fc_proj.out}};
}

// llama's block elementwise, by bytes: two RMSNorms (read and write the (b, s, h) share `local`), two residual adds
// without dropout (two reads, one write), SwiGLU over (b, s, f/t) (gate and up read, the product written) and the
// rotary embedding on the rank's q and k rows (read and written).
double llama_elementwise_seconds(const Layout& l, const SystemModel& sys, double local) {
  const double tokens = double(l.micro_batch) * l.model.seq, t = l.tp, p = dtype_bytes(l);
  const double qk_rows = l.model.hidden + l.model.kv_head_count() * l.model.head_dim();
  return memory_seconds(sys, 2 * 2 * local) + 2 * memory_seconds(sys, 3 * local) +
         memory_seconds(sys, 3 * tokens * l.model.ffn_dim() / t * p) + memory_seconds(sys, 2 * tokens * qk_rows / t * p);
}

PassCosts block_costs(const Layout& l, const SystemModel& sys) {
  const double b = l.micro_batch, s = l.model.seq, h = l.model.hidden, f = l.model.ffn_dim(), t = l.tp;
  const int p = dtype_bytes(l);
  const double tokens = b * s;
  const LayoutLinears dims = layout_linears(l);
  const BlockLinearSeconds linears = {linear_seconds(sys, dims.qkv, p), linear_seconds(sys, dims.proj, p),
                                      linear_seconds(sys, dims.fc, p), linear_seconds(sys, dims.fc_proj, p)};
  LinearSeconds mm;
  for (const LinearSeconds& x : linears)
    mm.forward += x.forward, mm.input_gradient += x.input_gradient, mm.weight_gradient += x.weight_gradient;
  // Elementwise: two layernorms, two dropout + residual adds on the replicated (b, s, h) (a 1/t share under
  // sequence parallelism), bias + GeLU on (b, s, f/t) (at the GeLU's own rate when the system has one).
  const double local = tokens * h * p / (l.sequence_parallel ? t : 1);
  const double elementwise = l.model.kind == ModelKind::llama
                                 ? llama_elementwise_seconds(l, sys, local)
                                 : memory_seconds(sys, 2 * 2 * local) + 2 * memory_seconds(sys, 3.5 * local) +
                                       measured_rate_seconds(sys, 2 * tokens * f / t * p, sys.gpu.gelu_gbps);
  const AttentionSeconds core = attention_core_seconds(l, sys);
  PassCosts c;
  c.forward = mm.forward + elementwise + core.forward;
  c.forward_tp = forward_tp_seconds(l, sys, dims, linears);
  // Backward: each linear's input and weight gradients, the attention core's, elementwise work twice.
  c.backward_input = mm.input_gradient + core.backward + 2 * elementwise;
  c.backward_weight = mm.weight_gradient;
  // Sequence parallelism keeps only the 1/t slice of each region's input, so the backward all-gathers it again for
  // the weight gradient (Korthikanti et al. 2022, Table 4: sequence parallelism saves the 22B layer 0.5 ms forward
  // but only 0.1 ms backward, though the backward moves twice the elementwise bytes it divides).
  c.backward_tp = backward_tp_seconds(l, sys, dims, linears);
  c.backward_weight += accumulation_seconds(l, sys, Unit::block);
  add_op_overhead(c, sys, kBlockOps);
  if (l.recompute == Recompute::selective && !l.model.flash_attention) c.recompute = core.forward;
  if (l.recompute == Recompute::full) c.recompute = c.forward, c.recompute_tp = c.forward_tp;
  return c;
}

PassCosts embedding_costs(const Layout& l, const SystemModel& sys) {
  const double tokens = double(l.micro_batch) * l.model.seq, p = dtype_bytes(l);
  PassCosts c;
  const double rows = l.model.kind == ModelKind::llama ? 1 : 2;  // token (+ position for gpt) rows, summed
  c.forward = memory_seconds(sys, rows * tokens * l.model.hidden * p);
  c.backward_weight = memory_seconds(sys, 3 * tokens * l.model.hidden * p) +
                     accumulation_seconds(l, sys, Unit::embedding);
  // Vocabulary-parallel lookup: partial rows summed over the tensor-parallel group (reduce-scatter under SP).
  c.forward_tp = tp_region_seconds(l, sys) / (l.sequence_parallel ? 2 : 1);
  c.backward_tp = c.forward_tp;
  add_op_overhead(c, sys, kEmbeddingOps);
  return c;
}

PassCosts head_costs(const Layout& l, const SystemModel& sys) {
  const double tokens = double(l.micro_batch) * l.model.seq, h = l.model.hidden, V = l.model.vocab, t = l.tp;
  const int p = dtype_bytes(l);
  const LinearSeconds logits = linear_seconds(sys, layout_linears(l).logits, p);
  // The loss, forward and again backward: fp32 logits written, read for max/sum and the loss, gradient written (4
  // bytes each); a fused kernel on the 16-bit logits reads them twice forward (max and sum, then the exponentials)
  // and once backward, writing the gradient (flash-attn's xentropy kernel).
  const double loss = memory_seconds(sys, tokens * V / t * (l.fused_cross_entropy ? 2 * p : 16));
  PassCosts c;
  c.forward = logits.forward + loss + memory_seconds(sys, 2 * tokens * h * p / (l.sequence_parallel ? t : 1));
  c.backward_input = logits.input_gradient + loss;
  c.backward_weight = logits.weight_gradient + accumulation_seconds(l, sys, Unit::head);
  if (l.sequence_parallel) c.forward_tp = c.backward_tp = tp_region_seconds(l, sys) / 2;  // gather before the head
  add_op_overhead(c, sys, kHeadOps);
  // Not recomputed under full recomputation: the frameworks checkpoint the transformer blocks only.
  return c;
}

UnitCosts unit_costs(const Layout& l, const SystemModel& sys) {
  auto time = [](const PassCosts& c) { return c.f() + c.bi() + c.w(); };
  return {time(embedding_costs(l, sys)), time(block_costs(l, sys)), time(head_costs(l, sys))};
}

double stage_block_count(const Layout& l, int stage) {
  double blocks = 0;
  for (int c = 0; c < l.virtual_stages; ++c) blocks += l.blocks_of(c * l.pp + stage);
  return blocks;
}

std::vector<double> stage_parameter_counts(const Layout& l) {
  ModelConfig m = l.model;
  m.tp = l.tp;
  m.sequence_parallel = l.sequence_parallel;
  std::vector<double> n;
  if (l.tp == 1 && l.pp == 1) n = {double(make_layout(m).parameters)};  // the data-parallel schemes count Psi unpadded
  else
    for (std::int64_t numel : stage_numel(m, l.pp, l.virtual_stages, l.stage_blocks)) n.push_back(double(numel));
  if (head_shares_embedding(l)) n[0] -= double(l.model.vocab / l.tp) * l.model.hidden;
  return n;
}

}  // namespace parbench::predict
