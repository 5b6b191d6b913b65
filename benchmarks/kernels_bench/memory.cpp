#include "benchmarks/kernels_bench/memory.h"

#include <algorithm>
#include <initializer_list>

namespace parbench::kernels_bench {

std::uint64_t workload_bytes(const optable::OpShape& s, std::uint64_t e, std::uint64_t acc) {
  const std::uint64_t B = std::uint64_t(s.B), T = std::uint64_t(s.T), C = std::uint64_t(s.C),
                      NH = std::uint64_t(s.NH), V = std::uint64_t(s.V), BT = B * T, n = 12 * C * C;
  // The grouped-query attention rows double an odd NH (kernels/attention_workloads.cpp).
  const std::uint64_t NHq = NH % 2 ? 2 * NH : NH;
  // The matmul forwards: input (BT, C*in), weight (C*out, C*in), bias (C*out), output (BT, C*out).
  auto matmul = [&](std::uint64_t in, std::uint64_t out) {
    return e * (BT * C * in + C * out * C * in + C * out + BT * C * out);
  };
  // flash_attention_bwd_hs64_128_gqa at head size hs: an even number of query heads, at least 4, two per kv head
  // (inp and dinp twice out's width); out, dout, lse and scratch.
  auto wide_gqa_backward = [&](std::uint64_t hs) {
    std::uint64_t nh = std::max<std::uint64_t>(4, C / hs);
    nh += nh % 2;
    return e * 6 * BT * hs * nh + acc * 2 * B * nh * T;
  };
  return std::max<std::uint64_t>({
      matmul(1, 3), matmul(1, 4), matmul(4, 1),
      matmul(1, 4) + e * BT * 4 * C,                  // matmul_forward_fc_gelu: the fc's and its pre-activation
      e * (6 * BT * C + 8 * C * C + 4 * C),           // matmul_backward_fc: inp, w, dout, dinp, dw, db
      4 * BT + e * (V * C + T * C + BT * C),          // encoder forward and backward: tokens, wte, wpe, out
      e * (12 * BT * C + 8 * C),                      // bias_gelu_backward (the largest gelu): inp, dout, dinp
      e * 20 * BT * C,                                // swiglu_backward: inp and dinp (BT, 8C), dout (BT, 4C)
      e * (3 * BT * C + 3 * C) + acc * 2 * BT,        // layernorm_backward: inp, dout, dinp, w, dw, db, mean, rstd
      e * (5 * BT * C + 2 * C) + acc * BT,            // rmsnorm_residual_backward: h, dh, dout, dinp, dres, w, dw, rstd
      e * 2 * BT * C + acc * (T + 2) * C,             // rope forward and backward: inp, out (dout, dinp), cos_sin
      e * 3 * BT * C + acc,                           // residual forward and backward, mse
      e * 8 * BT * C + acc * 2 * B * NHq * T * T,     // attention_backward: inp, out, dout, dinp, att, scratch
      wide_gqa_backward(64) + wide_gqa_backward(128), // both halves in one call
      e * 2 * BT * V + acc * BT + 4 * BT,             // crossentropy: logits, dlogits, losses, targets
      e * 2 * n + acc * 2 * n,                        // adamw_update: params, grads, m, v
      (e * 2 + acc * 3) * (n + 3),                    // adamw_update_master: params, grads, master, m, v
      (e == 8 ? 3 * 8 : 4 + 2 + 4) * BT * C,          // convert_f32_bf16_roundtrip: f32, bf16, f32 (f64 on cpu)
  });
}

namespace {

// What one workload needs on `dev`, from its bytes on one side at (element bytes, statistics bytes).
template <class BytesOf>
std::uint64_t need_on(const BytesOf& bytes_of, DType dt, const Device& dev) {
  const std::uint64_t benchmarked = bytes_of(dtype_size(dt), 4);
  if (!dev.on_host()) return benchmarked;
  // The reference side is float64 on cpu, of the benchmarked dtypes on simt; the staging holds one input at a
  // time, at most the benchmarked side again.
  const std::uint64_t reference = dev.kind == DeviceKind::cpu ? bytes_of(8, 8) : benchmarked;
  return 2 * benchmarked + reference;
}

}  // namespace

std::uint64_t memory_need(const std::vector<optable::OpShape>& shapes, const std::vector<DType>& dtypes,
                          const Device& dev) {
  std::uint64_t need = 0;
  for (const auto& s : shapes)
    for (DType dt : dtypes)
      need = std::max(need, need_on([&](std::uint64_t e, std::uint64_t acc) { return workload_bytes(s, e, acc); },
                                    dt, dev));
  return need;
}

std::uint64_t linear_bytes(const LinearShape& l, std::uint64_t e) {
  const std::uint64_t t = std::uint64_t(l.tokens), in = std::uint64_t(l.in), out = std::uint64_t(l.out);
  // Every part holds the input, the weight and the output or its gradient; then the forward its bias, the input
  // gradient its result (t x in), the weight gradient its result (out x in).
  return e * (t * in + out * in + t * out + std::max({out, t * in, out * in}));
}

std::uint64_t memory_need(const std::vector<LinearShape>& linears, const std::vector<DType>& dtypes,
                          const Device& dev) {
  std::uint64_t need = 0;
  for (const auto& l : linears)
    for (DType dt : dtypes)
      need = std::max(need, need_on([&](std::uint64_t e, std::uint64_t) { return linear_bytes(l, e); }, dt, dev));
  return need;
}

}  // namespace parbench::kernels_bench
