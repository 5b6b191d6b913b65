#include "benchmarks/kernels_memory.h"

#include <algorithm>
#include <initializer_list>

namespace parbench::kernels_bench {

std::uint64_t workload_bytes(const optable::OpShape& s, std::uint64_t e, std::uint64_t acc) {
  const std::uint64_t B = std::uint64_t(s.B), T = std::uint64_t(s.T), C = std::uint64_t(s.C),
                      NH = std::uint64_t(s.NH), V = std::uint64_t(s.V), BT = B * T, n = 12 * C * C;
  // The matmul forwards: input (BT, C*in), weight (C*out, C*in), bias (C*out), output (BT, C*out).
  auto matmul = [&](std::uint64_t in, std::uint64_t out) {
    return e * (BT * C * in + C * out * C * in + C * out + BT * C * out);
  };
  return std::max<std::uint64_t>({
      matmul(1, 3), matmul(1, 4), matmul(4, 1),
      matmul(1, 4) + e * BT * 4 * C,                  // matmul_forward_fc_gelu: the fc's and its pre-activation
      e * (6 * BT * C + 8 * C * C + 4 * C),           // matmul_backward_fc: inp, w, dout, dinp, dw, db
      4 * BT + e * (V * C + T * C + BT * C),          // encoder forward and backward: tokens, wte, wpe, out
      e * (12 * BT * C + 8 * C),                      // bias_gelu_backward (the largest gelu): inp, dout, dinp
      e * (3 * BT * C + 3 * C) + acc * 2 * BT,        // layernorm_backward: inp, dout, dinp, w, dw, db, mean, rstd
      e * 3 * BT * C + acc,                           // residual forward and backward, mse
      e * 8 * BT * C + acc * 2 * B * NH * T * T,      // attention_backward: inp, out, dout, dinp, att, scratch
      e * 2 * BT * V + acc * BT + 4 * BT,             // crossentropy: logits, dlogits, losses, targets
      e * 2 * n + acc * 2 * n,                        // adamw_update: params, grads, m, v
      (e * 2 + acc * 3) * (n + 3),                    // adamw_update_master: params, grads, master, m, v
      (e == 8 ? 3 * 8 : 4 + 2 + 4) * BT * C,          // convert_f32_bf16_roundtrip: f32, bf16, f32 (f64 on cpu)
  });
}

std::uint64_t memory_need(const std::vector<optable::OpShape>& shapes, const std::vector<DType>& dtypes,
                          const Device& dev) {
  std::uint64_t need = 0;
  for (const auto& s : shapes)
    for (DType dt : dtypes) {
      const std::uint64_t e = dtype_size(dt), benchmarked = workload_bytes(s, e, 4);
      if (!dev.on_host()) {
        need = std::max(need, benchmarked);
        continue;
      }
      // The reference side is float64 on cpu, of the benchmarked dtypes on simt; the staging holds one input at a
      // time, at most the benchmarked side again.
      const bool cpu = dev.kind == DeviceKind::cpu;
      const std::uint64_t reference = cpu ? workload_bytes(s, 8, 8) : benchmarked;
      need = std::max(need, 2 * benchmarked + reference);
    }
  return need;
}

}  // namespace parbench::kernels_bench
