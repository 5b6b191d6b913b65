// Per-GPU costs of one microbatch through one virtual pipeline stage: compute by kind, tensor-parallel
// communication on the critical path, and the ZeRO-3 gathers that prefetch cannot hide.
#pragma once
#include <array>
#include <vector>

#include "parallel/plan/partition.h"
#include "predict/predict.h"

namespace parbench::predict {

struct PassCosts {
  double forward = 0, forward_tp = 0;
  double backward_input = 0, backward_weight = 0, backward_tp = 0;
  double recompute = 0, recompute_tp = 0;  // extra forward work in the backward
  // ZeRO-3's gathers (and in the backward reduce-scatters) that the compute does not hide (predict/zero3.h).
  double zero3_forward = 0, zero3_backward = 0;
  PassCosts& operator+=(const PassCosts& o);
  PassCosts times(double k) const;
  double f() const { return forward + forward_tp + zero3_forward; }
  double bi() const { return backward_input + backward_tp + recompute + recompute_tp + zero3_backward; }
  double w() const { return backward_weight; }
};

// Time of an op on the GPU: memory-bound ops by bytes moved.
double memory_seconds(const SystemModel& sys, double bytes);
// `bytes` of an op whose rate was measured on its own kernel (`gbps` > 0, 1e9 B/s), else at the HBM figures.
double measured_rate_seconds(const SystemModel& sys, double bytes, double gbps);
// Which curve a k-keyed system times a GEMM on (GemmCurvesByK).
enum class GemmKind { forward, input_gradient, weight_gradient };
// A (batched) GEMM of (m x k) by (k x n): its FLOPs' time at the matrix efficiency (by its GFLOP, or by k where the
// system has k-keyed curves) and its bytes' time (inputs read, output written), the slower of the two or their sum
// by the GPU's processing mode.
double gemm_seconds(const SystemModel& sys, double batch, double m, double n, double k, int dtype_bytes,
                    GemmKind kind = GemmKind::forward);
// A linear layer's three GEMMs over `tokens` rows, `in` -> `out` features: the forward (k = in), the input gradient
// (k = out) and the weight gradient ((out x in), k = tokens). Their FLOPs and bytes are the same; only k-keyed
// efficiencies tell them apart. A system's measured linear of this very shape and element size gives all three.
struct LinearSeconds {
  double forward = 0, input_gradient = 0, weight_gradient = 0;
};
LinearSeconds linear_seconds(const SystemModel& sys, double tokens, double in, double out, int dtype_bytes);

// The weight matmuls one GPU runs per microbatch of a layout: a block's qkv (h -> 3h/t), projection (h/t -> h), fc
// (h -> f/t) and fc projection (f/t -> h), and the head's logits (h -> V/t), each over the microbatch's b s tokens.
// qkv and fc are the column-parallel ones. What a system's measured linears would have to hold for the layout.
struct LinearDims {
  double tokens = 0, in = 0, out = 0;
};
struct LayoutLinears {
  LinearDims qkv, proj, fc, fc_proj, logits;
  std::array<LinearDims, 5> all() const { return {qkv, proj, fc, fc_proj, logits}; }
};
LayoutLinears layout_linears(const Layout& l);
// The pieces Transformer Engine's userbuffers split a block's GEMMs into (none without --tp-userbuffers or with tp 1):
// qkv, fc, projection and fc projection over a tp-th of the tokens (ring exchanges), the projections over a quarter
// (pipelined reduce-scatters). A system's measured linears of these shapes time the pieces.
std::vector<LinearDims> userbuffer_pieces(const Layout& l);
// The attention one GPU runs per microbatch: b samples, a/t heads of h/a channels, s tokens (what a system's
// measured attention must hold for the layout's flash attention; scripts/sdpa_compare.py's B,T,NH,HS).
struct AttentionDims {
  double batch = 0, heads = 0, seq = 0, head_dim = 0;
};
AttentionDims layout_attention(const Layout& l);
LinearSeconds linear_seconds(const SystemModel& sys, const LinearDims& d, int dtype_bytes);

// Bytes of one microbatch's (b, s, h) activation: what tensor-parallel collectives and stage sends move.
double activation_bytes(const Layout& l);

// Bytes per gradient element the data-parallel reduction moves and the GPU holds them in (--dp-reduce).
double gradient_bytes(const Layout& l);

// One transformer block, the embedding and the head (with its loss), for one microbatch on one GPU.
PassCosts block_costs(const Layout& l, const SystemModel& sys);
PassCosts embedding_costs(const Layout& l, const SystemModel& sys);
PassCosts head_costs(const Layout& l, const SystemModel& sys);
// One microbatch's forward and backward through the embedding, a block and the head: what a balanced pipeline
// partition evens out (parallel/plan/partition.h).
UnitCosts unit_costs(const Layout& l, const SystemModel& sys);

// Every virtual stage's costs for `l` (ZeRO-3's exposed gathers included), and the predictor's second half: the
// schedule played with given costs and stage-to-stage transfer time, then the data-parallel reduction, optimizer,
// throughput and memory (predict_step = this with the layout's own costs).
std::vector<PassCosts> all_stage_costs(const Layout& l, const SystemModel& sys);
Prediction predict_with_costs(const Layout& l, const SystemModel& sys, const std::vector<PassCosts>& vs_costs,
                              double transfer, bool split_pp_comm = true);

// Transformer blocks on pipeline stage `stage`, over all its chunks.
double stage_block_count(const Layout& l, int stage);
// Parameter elements held by each pipeline stage (its chunks' units of the tensor-parallel layout) before any
// ZeRO sharding: what bench_train's --estimate-memory counts for that stage's ranks.
std::vector<double> stage_parameter_counts(const Layout& l);

}  // namespace parbench::predict
