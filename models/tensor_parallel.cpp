// The tp parameter map and the counted tp collectives (allreduce, and the sequence all-gather / reduce-scatter
// with their (B, T, C) <-> rank-major reordering).
#include "models/tensor_parallel.h"

#include "collectives/table/collective_table.h"
#include "base/error.h"
#include "core/memory.h"
#include "profiles/range.h"

namespace parbench {

namespace {

// The full rows of each part of a stacked column-parallel weight, in order; empty for any other parameter.
std::vector<std::int64_t> stacked_parts(const ModelConfig& c, const std::string& name) {
  const std::int64_t C = c.hidden, kv = std::int64_t(c.kv_head_count()) * c.head_dim(), F = c.ffn_dim();
  if (c.kind == ModelKind::gpt && (name == "qkvw" || name == "qkvb")) return {C, C, C};
  if (c.kind == ModelKind::llama && name == "qkvw") return {C, kv, kv};
  if (c.kind == ModelKind::llama && name == "gate_upw") return {F, F};
  return {};
}

}  // namespace

TpIndex tp_index(const ModelConfig& c, int tp_rank, int unit) {
  if (tp_rank < 0 || tp_rank >= c.tp)
    throw Error("tp_index: rank " + std::to_string(tp_rank) + " is not in [0, " + std::to_string(c.tp) + ")");
  const ParamLayout local = make_layout(c), full = make_layout(c.unsplit());
  const UnitLayout& lu = local.units.at(std::size_t(unit));
  const UnitLayout& fu = full.units.at(std::size_t(unit));
  const std::int64_t n = c.tp, r = tp_rank;
  TpIndex map{std::vector<std::int64_t>(std::size_t(lu.numel), -1), std::vector<bool>(std::size_t(lu.numel), false)};
  for (std::size_t k = 0; k < lu.params.size(); ++k) {
    const ParamSpec& lp = lu.params[k];
    const ParamSpec& fp = fu.params.at(k);
    const std::int64_t numel = shape_numel(lp.shape);
    const std::int64_t cols = lp.shape.size() == 2 ? lp.shape[1] : 1;        // local columns
    const std::int64_t full_cols = fp.shape.size() == 2 ? fp.shape[1] : 1;
    const bool replicated = lp.shape == fp.shape;
    // Column-parallel weights of stacked parts (gpt's q | k | v, llama's q | k | v of fewer kv heads and its
    // gate | up): each part split over the ranks, a rank's rows its piece of every part in the same order.
    const std::vector<std::int64_t> parts = stacked_parts(c, lp.name);
    const std::int64_t rows = lp.shape[0];
    for (std::int64_t i = 0; i < numel; ++i) {
      const std::int64_t row = i / cols, col = i % cols;
      std::int64_t frow = row, fcol = col;
      if (replicated) {
      } else if (!parts.empty()) {
        std::int64_t begin = 0, within = row;  // the part's first row in the full weight, the row inside the piece
        for (std::int64_t full_rows : parts) {
          if (within < full_rows / n) {
            frow = begin + r * (full_rows / n) + within;
            break;
          }
          within -= full_rows / n;
          begin += full_rows;
        }
      } else if (lp.shape[0] != fp.shape[0]) {  // column-parallel: a block of output rows
        frow = r * rows + row;
      } else {  // row-parallel: a block of input columns
        fcol = r * cols + col;
      }
      map.full[std::size_t(lp.offset + i)] = fp.offset + frow * full_cols + fcol;
      map.replicated[std::size_t(lp.offset + i)] = replicated;
    }
  }
  return map;
}

std::uint64_t tp_bytes_per_microbatch(const ModelConfig& c, std::int64_t samples, int first_unit, int last_unit) {
  const int n = c.tp;
  if (n == 1) return 0;
  auto ar = [&](std::uint64_t s) { return wire_bytes(Collective::allreduce, s, n); };
  auto sh = [&](std::uint64_t s) { return wire_bytes(Collective::allgather, s, n); };  // or reduce-scatter
  const std::uint64_t B = std::uint64_t(samples), C = std::uint64_t(c.hidden), d = dtype_size(c.dtype);
  std::uint64_t total = 0;
  for (int u = first_unit; u < last_unit; ++u) {
    if (c.kind == ModelKind::mlp) {  // the branch output forward, its input gradient backward (none for the input)
      total += ar(B * C * d) * (u > 0 ? 2 : 1);
      continue;
    }
    const std::uint64_t S = B * std::uint64_t(c.seq) * C * d;           // a full (B,T,C) activation
    const std::uint64_t stats = B * std::uint64_t(c.seq) * dtype_size(c.stat_dtype());  // (B,T) statistics
    // sp: a norm's parameter gradients (gpt's layernorm weight and bias, llama's RMSNorm weight)
    const std::uint64_t ln = ar((c.kind == ModelKind::llama ? 1 : 2) * C * d);
    const bool sp = c.sequence_parallel;
    if (u == 0)  // the embedding's output: allreduce (sp: reduce-scatter, all-gather of its gradient)
      total += sp ? 2 * sh(S) : ar(S);
    else if (u == c.layers + 1)  // the head: input (gradient) and the cross-entropy's row max and sums
      total += (sp ? 2 * sh(S) + ln : ar(S)) + ar(stats) + ar(2 * stats);
    else  // a block: after proj and fcproj, and before both layernorm backwards
      total += sp ? 8 * sh(S) + 2 * ln : 4 * ar(S);
  }
  return total;
}

namespace tp_comm {

namespace {

// Moves `chunks_b` x `chunks_a` blocks of `block` bytes from layout [a][b] (src) to [b][a] (dst): for each a,
// one strided copy of its chunks_b blocks.
void transpose_blocks(const Device& d, void* dst, const void* src, std::int64_t chunks_a, std::int64_t chunks_b,
                      std::size_t block, const Stream& s) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  for (std::int64_t a = 0; a < chunks_a; ++a)
    device_memcpy_2d_async(d, out + std::size_t(a) * block, std::size_t(chunks_a) * block, d,
                           in + std::size_t(a * chunks_b) * block, block, block, std::size_t(chunks_b), s);
}

void check_seq_shapes(const char* what, const Tensor& full, const Tensor& local, int n) {
  Shape expect = full.shape();
  if (expect.size() < 2 || expect[1] % n != 0 || full.dtype() != local.dtype())
    throw Error(std::string(what) + ": full tensor " + shape_string(full.shape()) + " cannot be split over " +
                std::to_string(n) + " ranks along the sequence");
  expect[1] /= n;
  if (local.shape() != expect)
    throw Error(std::string(what) + ": shard " + shape_string(local.shape()) + " should be " + shape_string(expect));
}

}  // namespace

void allreduce(TensorParallel& tp, Tensor& t, ReduceOp op, const Stream& s) {
  const int n = tp.comm ? tp.comm->size() : 1;
  if (n == 1) return;
  PB_RANGE("tp allreduce", Category::communication, {.bytes = std::int64_t(t.bytes())});
  Communicator::StreamOrder on_compute(*tp.comm, s.native());
  tp.comm->allreduce(t.data(), t.data(), std::size_t(t.numel()), t.dtype(), op);
  tp.bytes += wire_bytes(Collective::allreduce, t.bytes(), n);
}

void all_gather_seq(TensorParallel& tp, Tensor& full, const Tensor& local, TrackedAllocator& alloc, const Stream& s) {
  const int n = tp.comm ? tp.comm->size() : 1;
  check_seq_shapes("all_gather_seq", full, local, n);
  if (n == 1) {
    device_memcpy_async(full.device(), full.data(), local.device(), local.data(), local.bytes(), s);
    return;
  }
  PB_RANGE("tp all-gather", Category::communication, {.bytes = std::int64_t(full.bytes())});
  Communicator::StreamOrder on_compute(*tp.comm, s.native());
  const std::int64_t B = full.dim(0);
  const std::size_t count = std::size_t(local.numel());
  if (B == 1) {  // the rank-major result is already (1, T, ...)
    tp.comm->allgather(local.data(), full.data(), count, local.dtype());
  } else {
    // The gather concatenates whole shards: (n, B, T/n, ...); each sample's T/n rows go back in place.
    Tensor staging(alloc, full.dtype(), full.shape(), MemCategory::communication);
    tp.comm->allgather(local.data(), staging.data(), count, local.dtype());
    transpose_blocks(full.device(), full.data(), staging.data(), n, B, local.bytes() / std::size_t(B), s);
  }
  tp.bytes += wire_bytes(Collective::allgather, full.bytes(), n);
}

void reduce_scatter_seq(TensorParallel& tp, Tensor& local, const Tensor& full, TrackedAllocator& alloc,
                        const Stream& s) {
  const int n = tp.comm ? tp.comm->size() : 1;
  check_seq_shapes("reduce_scatter_seq", full, local, n);
  if (n == 1) {
    device_memcpy_async(local.device(), local.data(), full.device(), full.data(), local.bytes(), s);
    return;
  }
  PB_RANGE("tp reduce-scatter", Category::communication, {.bytes = std::int64_t(full.bytes())});
  Communicator::StreamOrder on_compute(*tp.comm, s.native());
  const std::int64_t B = full.dim(0);
  const std::size_t count = std::size_t(local.numel());
  if (B == 1) {
    tp.comm->reduce_scatter(full.data(), local.data(), count, full.dtype(), ReduceOp::sum);
  } else {
    // Rank-major first, (B, n, T/n, ...) -> (n, B, T/n, ...), so that rank r's block is its shard of every sample.
    Tensor staging(alloc, full.dtype(), full.shape(), MemCategory::communication);
    transpose_blocks(full.device(), staging.data(), full.data(), B, n, local.bytes() / std::size_t(B), s);
    tp.comm->reduce_scatter(staging.data(), local.data(), count, full.dtype(), ReduceOp::sum);
  }
  tp.bytes += wire_bytes(Collective::reduce_scatter, full.bytes(), n);
}

}  // namespace tp_comm

}  // namespace parbench
