// Helpers for the vocabulary-parallel ops' tests: split a full tensor into column / row shards, run the
// three cross-entropy passes over the shards with the statistics combined on the host as the tensor-parallel
// ranks' allreduces would, and glue the per-shard results back together. They work on any host-visible device
// (cpu or simt), so the reference and the emulated kernels share them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/allocator.h"
#include "base/dtype.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench::test {

// x (..., V) seen as rows of V: columns [begin, begin + n) of every row into a new (..., n) tensor.
inline Tensor take_columns(TrackedAllocator& a, const Tensor& x, int begin, int n) {
  Shape shape = x.shape();
  std::int64_t V = shape.back();
  shape.back() = n;
  Tensor out(a, x.dtype(), shape, MemCategory::activations);
  for (std::int64_t r = 0; r < x.numel() / V; ++r)
    for (int i = 0; i < n; ++i)
      store_from_double(out.data(), out.dtype(), std::size_t(r * n + i), at(x, r * V + begin + i));
  return out;
}
// The inverse: shard (..., n) into columns [begin, begin + n) of x (..., V).
inline void put_columns(Tensor& x, const Tensor& shard, int begin) {
  std::int64_t V = x.dim(-1), n = shard.dim(-1);
  for (std::int64_t r = 0; r < shard.numel() / std::max<std::int64_t>(n, 1); ++r)
    for (std::int64_t i = 0; i < n; ++i)
      store_from_double(x.data(), x.dtype(), std::size_t(r * V + begin + i), at(shard, r * n + i));
}
// Rows [begin, begin + n) of a (V, C) table; put_rows is its inverse.
inline Tensor take_rows(TrackedAllocator& a, const Tensor& x, int begin, int n) {
  std::int64_t C = x.dim(1);
  Tensor out(a, x.dtype(), {n, C}, MemCategory::activations);
  for (std::int64_t i = 0; i < n * C; ++i)
    store_from_double(out.data(), out.dtype(), std::size_t(i), at(x, begin * C + i));
  return out;
}
inline void put_rows(Tensor& x, const Tensor& shard, int begin) {
  for (std::int64_t i = 0; i < shard.numel(); ++i)
    store_from_double(x.data(), x.dtype(), std::size_t(begin * x.dim(1) + i), at(shard, i));
}

// Shard boundaries: `parts` near-equal pieces of [0, V) as their begins, plus V at the end.
inline std::vector<int> shard_bounds(int V, int parts) {
  std::vector<int> b;
  for (int p = 0; p <= parts; ++p) b.push_back(int(std::int64_t(V) * p / parts));
  return b;
}

// Result of one vocabulary-parallel cross-entropy: every rank's losses and the concatenated dlogits.
struct ShardedCrossentropy {
  std::vector<Tensor> losses;
  Tensor dlogits;
};

// Runs crossentropy_shard_max / _sums / _finish on the column shards of `logits` (..., V) given by `bounds`,
// combining row_max (max) and sumexp, target_logit (sum) on the host between the passes. `in_place` lets
// each shard's dlogits overwrite its logits; otherwise dlogits start poisoned with NaN.
inline ShardedCrossentropy crossentropy_by_shards(TrackedAllocator& a, const Stream& s, const Tensor& logits,
                                                  const Tensor& targets, const std::vector<int>& bounds, float dloss,
                                                  bool in_place) {
  DType acc = logits.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  std::int64_t N = shape_numel(rows);
  int parts = int(bounds.size()) - 1;
  auto stat = [&] {
    Tensor t(a, acc, rows, MemCategory::activations);
    fill_nan(t);
    return t;
  };
  std::vector<Tensor> x, row_max, sumexp, target_logit;
  for (int p = 0; p < parts; ++p) {
    x.push_back(take_columns(a, logits, bounds[p], bounds[p + 1] - bounds[p]));
    row_max.push_back(stat());
    sumexp.push_back(stat());
    target_logit.push_back(stat());
    ops::crossentropy_shard_max(row_max[p], x[p], s);
  }
  // allreduce(max) of row_max
  for (std::int64_t r = 0; r < N; ++r) {
    double m = at(row_max[0], r);
    for (int p = 1; p < parts; ++p) m = std::max(m, at(row_max[p], r));
    for (int p = 0; p < parts; ++p) store_from_double(row_max[p].data(), acc, std::size_t(r), m);
  }
  for (int p = 0; p < parts; ++p)
    ops::crossentropy_shard_sums(sumexp[p], target_logit[p], x[p], targets, row_max[p], bounds[p], s);
  // allreduce(sum) of sumexp and target_logit
  for (std::int64_t r = 0; r < N; ++r) {
    double se = 0, tl = 0;
    for (int p = 0; p < parts; ++p) {
      se += at(sumexp[p], r);
      tl += at(target_logit[p], r);
    }
    for (int p = 0; p < parts; ++p) {
      store_from_double(sumexp[p].data(), acc, std::size_t(r), se);
      store_from_double(target_logit[p].data(), acc, std::size_t(r), tl);
    }
  }
  ShardedCrossentropy out{{}, Tensor(a, logits.dtype(), logits.shape(), MemCategory::activations)};
  fill_nan(out.dlogits);
  for (int p = 0; p < parts; ++p) {
    out.losses.push_back(stat());
    Tensor d;
    if (!in_place) {
      d = Tensor(a, logits.dtype(), x[p].shape(), MemCategory::activations);
      fill_nan(d);
    }
    Tensor& dl = in_place ? x[p] : d;
    ops::crossentropy_shard_finish(out.losses[p], &dl, x[p], targets, row_max[p], sumexp[p], target_logit[p],
                                   bounds[p], dloss, s);
    put_columns(out.dlogits, dl, bounds[p]);
  }
  return out;
}

}  // namespace parbench::test
