// Shared by rd and rhd: folding a non-power-of-two group onto p2 = 2^floor(lg n) "virtual" ranks, recursive
// doubling (allgather of block ranges) and recursive halving (reduce-scatter of block ranges) among them.
// Ranks r < 2*extra pair up: odd r folds its data into r - 1 and waits; the virtual rank of r is r/2 there and
// r - extra above. Virtual rank v owns real blocks [lo(v), lo(v+1)), always a contiguous range.
#pragma once
#include <vector>

#include "collectives/algorithms/host_algorithm.h"
#include "collectives/table/partition.h"

namespace parbench::recursive {

// The fold of a group that is not a power of two (table/partition.h, shared with the device-side kernels).
using Fold = ButterflyFold;

// Element offsets of n blocks: off[b] .. off[b+1] is block b.
inline std::vector<std::size_t> fixed_blocks(std::size_t count, int n) {
  std::vector<std::size_t> off(std::size_t(n) + 1);
  for (int b = 0; b <= n; ++b) off[std::size_t(b)] = count * std::size_t(b);
  return off;
}
inline std::vector<std::size_t> even_blocks(std::size_t count, int n) {
  std::vector<std::size_t> off(std::size_t(n) + 1);
  for (int b = 0; b < n; ++b) off[std::size_t(b)] = even_block(count, n, b).offset;
  off[std::size_t(n)] = count;
  return off;
}

// On entry virtual rank v holds its own range of `buf`; on exit every range. Folded ranks do not take part.
inline void doubling_allgather(CollectiveSteps& c, const Fold& f, void* buf, const std::vector<std::size_t>& off,
                               DType t) {
  const std::size_t es = dtype_size(t);
  for (int mask = 1; mask < f.p2; mask <<= 1) {
    int mine = f.v & ~(mask - 1), theirs = (f.v ^ mask) & ~(mask - 1);
    std::size_t s0 = off[std::size_t(f.lo(mine))], s1 = off[std::size_t(f.lo(mine + mask))];
    std::size_t r0 = off[std::size_t(f.lo(theirs))], r1 = off[std::size_t(f.lo(theirs + mask))];
    int peer = f.real_of(f.v ^ mask);
    P2POp ops[2] = {send_op(byte_ptr(buf, s0, t), (s1 - s0) * es, peer),
                    recv_op(byte_ptr(buf, r0, t), (r1 - r0) * es, peer)};
    c.group(ops);
  }
}

// On entry `src` holds this virtual rank's full contribution (`src` may be `buf`: in place); on exit `buf`'s own
// range is reduced over all. The first step reads `src`, later ones the partial results in `buf`.
inline void halving_reduce_scatter(CollectiveSteps& c, const Fold& f, const void* src, void* buf,
                                   const std::vector<std::size_t>& off, DType t, ReduceOp op) {
  const std::size_t es = dtype_size(t);
  int g = 0, m = f.p2;
  while (m > 1) {
    const int half = m / 2;
    const bool lower = f.v < g + half;
    const int keep = lower ? g : g + half, give = lower ? g + half : g;
    std::size_t k0 = off[std::size_t(f.lo(keep))], k1 = off[std::size_t(f.lo(keep + half))];
    std::size_t g0 = off[std::size_t(f.lo(give))], g1 = off[std::size_t(f.lo(give + half))];
    void* tmp = c.scratch(1, (k1 - k0) * es);
    int peer = f.real_of(f.v ^ half);
    P2POp ops[2] = {send_op(byte_ptr(src, g0, t), (g1 - g0) * es, peer), recv_op(tmp, (k1 - k0) * es, peer)};
    c.group(ops);
    c.combine(byte_ptr(buf, k0, t), byte_ptr(src, k0, t), tmp, k1 - k0, t, op);
    src = buf, g = keep, m = half;
  }
}

// Fold step of a reduction: odd ranks below 2*extra send `bytes` of `buf`; their partners add it in.
inline void fold_in(CollectiveSteps& c, const Fold& f, void* buf, std::size_t count, DType t, ReduceOp op) {
  const int r = c.rank();
  if (r >= 2 * f.extra) return;
  const std::size_t bytes = count * dtype_size(t);
  if (f.folded) return c.send(buf, bytes, r - 1);
  void* tmp = c.scratch(1, bytes);
  c.recv(tmp, bytes, r + 1);
  c.combine(buf, tmp, count, t, op);
}

// rd's allgather: also used by rhd. Works for any n.
inline void allgather(CollectiveSteps& c, const CollArgs& a) {
  const int n = c.size(), r = c.rank();
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  const Fold f(n, r);
  auto block = [&](int b) { return byte_ptr(a.recv, a.count * std::size_t(b), a.dtype); };
  c.copy(block(r), a.send, bytes);
  if (r < 2 * f.extra) {
    if (f.folded) {
      c.send(block(r), bytes, r - 1);
      return c.recv(a.recv, bytes * std::size_t(n), r - 1);
    }
    c.recv(block(r + 1), bytes, r + 1);
  }
  doubling_allgather(c, f, a.recv, fixed_blocks(a.count, n), a.dtype);
  if (r < 2 * f.extra) c.send(a.recv, bytes * std::size_t(n), r + 1);
}

}  // namespace parbench::recursive
