// Grouped-query attention tests' helpers: inp (B,T,(NH + 2 KV) hs) with its K/V heads repeated by hand into the
// multi-head layout (B,T,3C), and a multi-head input gradient folded back (a kv head's dk, dv summed over its group
// in float64).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench::test {

struct GqaDims {
  int B, T, NH, KV, hs;
  int C() const { return NH * hs; }
  int width() const { return C() + 2 * KV * hs; }
  // Channel of query head h's kv head's key (part 1) or value (part 2), channel d, in the grouped layout.
  int grouped(int part, int h, int d) const { return C() + ((part - 1) * KV + h / (NH / KV)) * hs + d; }
};

// rep (B,T,3C) = q | k of each query head's kv head | v likewise, from inp (B,T,width) of the same dtype.
inline void repeat_kv(Tensor& rep, const Tensor& inp, const GqaDims& g) {
  const int C = g.C();
  for (std::int64_t bt = 0; bt < std::int64_t(g.B) * g.T; ++bt)
    for (int part = 0; part < 3; ++part)
      for (int h = 0; h < g.NH; ++h)
        for (int d = 0; d < g.hs; ++d) {
          const std::int64_t src = bt * g.width() + (part == 0 ? h * g.hs + d : g.grouped(part, h, d));
          const std::int64_t dst = bt * 3 * C + part * C + h * g.hs + d;
          store_from_double(rep.data(), rep.dtype(), std::size_t(dst), at(inp, src));
        }
}

// The grouped gradient (B,T,width) from a multi-head one (B,T,3C): dq as it is, dk and dv summed over each group.
inline std::vector<double> fold_groups(const Tensor& drep, const GqaDims& g) {
  const int C = g.C();
  std::vector<double> out(std::size_t(g.B) * g.T * g.width(), 0.0);
  for (std::int64_t bt = 0; bt < std::int64_t(g.B) * g.T; ++bt)
    for (int part = 0; part < 3; ++part)
      for (int h = 0; h < g.NH; ++h)
        for (int d = 0; d < g.hs; ++d) {
          const std::int64_t dst = bt * g.width() + (part == 0 ? h * g.hs + d : g.grouped(part, h, d));
          out[std::size_t(dst)] += at(drep, bt * 3 * C + part * C + h * g.hs + d);
        }
  return out;
}

}  // namespace parbench::test
