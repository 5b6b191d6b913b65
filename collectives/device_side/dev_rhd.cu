// rhd-dev's kernel: recursive halving-doubling (Rabenseifner) through the symmetric buffers, one launch each. Every
// rank copies its input into its buffer; a reduce-scatter by recursive halving follows: at each level virtual rank v
// exchanges flags with v ^ half, keeps the half of its group's blocks on its side and adds the partner's partial
// sums of that half into its own buffer, in place (the partner meanwhile reads the other half, which this rank no
// longer writes). Then v owns its blocks reduced over every rank; reduce-scatter ends there, allreduce gathers the
// blocks back by recursive doubling (each level copies the partner's blocks, into positions nobody reads any more).
// Each element is reduced by one rank only, so every rank gets the same bits. Bandwidth-optimal like ring, in
// 2 lg p steps; groups that are not a power of two fold first (symm_fold.h).
#include "collectives/device_side/symm_fold.h"

namespace parbench::PB_KERNEL_NS {

// The message's n real blocks: allreduce splits `count` as evenly as possible, reduce-scatter's are `count` each.
struct RhdBlocks {
  unsigned long long count;
  int n;
  bool fixed;
  __device__ unsigned long long at(int s) const {
    if (fixed) return (unsigned long long)s * count;
    return s == n ? count : symm_part(0, count, unsigned(n), unsigned(s)).begin;
  }
  // This kernel block's part of real block s (the same on every rank).
  __device__ SymmRange piece(int s) const {
    return symm_part(at(s), at(s + 1) - at(s), gridDim.x, blockIdx.x);
  }
};

// dst[i - dst_from] = src[i] over real blocks [from, to), and the same into dst2 (at i) when not null.
template <class S>
__device__ void rhd_copy(S* dst, unsigned long long dst_from, S* dst2, const S* src, const RhdBlocks& b, int from,
                         int to) {
  for (int s = from; s < to; ++s) {
    const SymmRange c = b.piece(s);
    for (unsigned long long i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
      const S x = src[i];
      dst[i - dst_from] = x;
      if (dst2) dst2[i] = x;
    }
  }
}

template <class E, int OP>
__device__ void rhd_add(typename E::S* mine, const typename E::S* theirs, const RhdBlocks& b, int from, int to) {
  for (int s = from; s < to; ++s) {
    const SymmRange c = b.piece(s);
    for (unsigned long long i = c.begin + threadIdx.x; i < c.end; i += blockDim.x)
      mine[i] = symm_combine<E, OP>(mine[i], theirs[i]);
  }
}

// The halving levels (phases 2 .. steps + 1); false when a partner did not arrive.
template <class E, int OP>
__device__ bool rhd_halve(const SymmPeers& p, const SymmFold& f, const RhdBlocks& b, SymmFirstWait& first,
                          unsigned long long deadline) {
  using S = typename E::S;
  int group = 0, size = f.p2;
  for (int h = 0; h < f.steps; ++h) {
    const int half = size / 2, keep = f.v < group + half ? group : group + half;
    const int partner = f.real_of(f.v ^ half);
    if (!symm_exchange(p, symm_bit(partner), symm_bit(partner), 2 + h, deadline, first.next())) return false;
    rhd_add<E, OP>(static_cast<S*>(p.buffers[p.rank]), static_cast<const S*>(p.buffers[partner]), b, f.lo(keep),
                   f.lo(keep + half));
    group = keep, size = half;
  }
  return true;
}

// The doubling levels (phases steps + 2 .. 2 steps + 1): the partner's blocks into the buffer and the output.
template <class S>
__device__ bool rhd_double(const SymmPeers& p, const SymmFold& f, const RhdBlocks& b, S* out,
                           unsigned long long deadline) {
  for (int d = 0; d < f.steps; ++d) {
    const int mask = 1 << d, theirs = (f.v ^ mask) & ~(mask - 1), partner = f.real_of(f.v ^ mask);
    if (!symm_exchange(p, symm_bit(partner), symm_bit(partner), 2 + f.steps + d, deadline)) return false;
    rhd_copy(static_cast<S*>(p.buffers[p.rank]), 0, out, static_cast<const S*>(p.buffers[partner]), b,
             f.lo(theirs), f.lo(theirs + mask));
  }
  return true;
}

// `flags`: 1 for reduce-scatter, plus 2 for avg.
template <class E, int OP>
__global__ void symm_rhd_kernel(SymmPeers p, const void* send, void* recv, unsigned long long count, int flags) {
  using S = typename E::S;
  symm_op_begin(p);
  const int r = p.rank, n = p.ranks, avg = flags >> 1;
  const bool scatter = flags & 1;
  const unsigned long long deadline = symm_now_ns() + p.timeout_ns;
  const RhdBlocks b{count, n, scatter};
  const SymmFold f(n, r);
  S* mine = static_cast<S*>(p.buffers[r]);
  S* out = static_cast<S*>(recv);
  const unsigned long long out_from = scatter ? b.at(r) : 0;  // reduce-scatter's output is block r alone
  const unsigned result = fold_result_phase(2 * f.steps), done = fold_done_phase(2 * f.steps);
  SymmFirstWait first{p.skip_ready_wait != 0};
  rhd_copy<S>(mine, 0, nullptr, static_cast<const S*>(send), b, 0, n);
  if (f.folded) {
    if (!symm_exchange(p, symm_bit(r - 1), 0, kFoldPhase, deadline)) return;
    if (!symm_exchange(p, 0, symm_bit(r - 1), result, deadline, first.next())) return;
    const S* theirs = static_cast<const S*>(p.buffers[r - 1]);
    rhd_copy<S>(out, out_from, nullptr, theirs, b, scatter ? r : 0, scatter ? r + 1 : n);
    symm_exchange(p, symm_bit(r - 1), 0, done, deadline);
    return;
  }
  if (f.folded_partner >= 0) {
    if (!symm_exchange(p, 0, symm_bit(f.folded_partner), kFoldPhase, deadline, first.next())) return;
    rhd_add<E, OP>(mine, static_cast<const S*>(p.buffers[f.folded_partner]), b, 0, n);
  }
  if (!rhd_halve<E, OP>(p, f, b, first, deadline)) return;
  const int own_from = f.lo(f.v), own_to = f.lo(f.v + 1);
  for (int s = own_from; avg && s < own_to; ++s) {
    const SymmRange c = b.piece(s);
    for (unsigned long long i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) mine[i] = symm_average<E>(mine[i], n);
  }
  rhd_copy<S>(out, out_from, nullptr, mine, b, scatter ? r : own_from, scatter ? r + 1 : own_to);
  if (!scatter && !rhd_double(p, f, b, out, deadline)) return;
  if (f.folded_partner >= 0 && !symm_exchange(p, symm_bit(f.folded_partner), 0, result, deadline)) return;
  symm_exchange(p, f.partners, f.partners | symm_bit(f.folded_partner), done, deadline);
}

void symm_rhd(const SymmPeers& p, int coll, const void* send, void* recv, unsigned long long count, int dtype, int op,
              void* stream) {
  if (count == 0) return;
  const bool scatter = coll == int(Collective::reduce_scatter);
  SymmKernel k = PB_SYMM_PICK(symm_rhd_kernel, dtype, op);
  const int flags = (scatter ? 1 : 0) | (op == int(ReduceOp::avg) ? 2 : 0);
  // Blocks for the smallest real block (allreduce's are count / n), as every rank computes alike.
  const unsigned long long block = scatter ? count : count / unsigned(p.ranks);
  PB_LAUNCH(k, dim3(symm_blocks(block)), dim3(kSymmThreads), 0, stream)(p, send, recv, count, flags);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
