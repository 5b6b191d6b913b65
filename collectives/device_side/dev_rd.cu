// rd-dev's kernel: recursive doubling (a butterfly) through the symmetric buffers, one launch each. At step k
// virtual rank v exchanges with v ^ 2^k: flags both ways, then each reads the other's buffer. Allreduce: step k
// combines both ranks' partial results (region k of each buffer) into region k + 1, the lower virtual rank's
// operand first, so both sides (and in the end every rank) hold bit-identical values; lg p steps of the whole
// message, for small messages. Allgather: step k copies the partner's blocks gathered so far. Groups that are not
// a power of two fold first (symm_fold.h); at the end each rank tells its partners it is done reading.
#include "collectives/device_side/symm_fold.h"

namespace parbench::PB_KERNEL_NS {

// dst[i] = src[i] (and dst2[i] when not null) over this kernel block's part of blocks [from, to) of `count`.
template <class S>
__device__ void rd_copy_blocks(S* dst, S* dst2, const S* src, SymmRange part, unsigned long long count, int from,
                               int to) {
  for (int s = from; s < to; ++s) {
    const unsigned long long at = (unsigned long long)s * count;
    for (unsigned long long i = at + part.begin + threadIdx.x; i < at + part.end; i += blockDim.x) {
      const S x = src[i];
      dst[i] = x;
      if (dst2) dst2[i] = x;
    }
  }
}

// Region k of rank q's buffer holds its partial result after k steps (region 0: the input, with the folded rank's
// added); the last step writes the output (and, for a folded partner, region `steps`).
template <class E, int OP>
__device__ void rd_allreduce(const SymmPeers& p, const typename E::S* in, typename E::S* out, unsigned long long count,
                             int avg, unsigned long long deadline) {
  using S = typename E::S;
  const int r = p.rank;
  const SymmFold f(p.ranks, r);
  const SymmRange part = symm_part(0, count, gridDim.x, blockIdx.x);
  auto region = [&](int q, int k) { return static_cast<S*>(p.buffers[q]) + (unsigned long long)k * count; };
  const unsigned result = fold_result_phase(f.steps), done = fold_done_phase(f.steps);
  SymmFirstWait first{p.skip_ready_wait != 0};
  symm_copy(region(r, 0), in, part);
  if (f.folded) {
    if (!symm_exchange(p, symm_bit(r - 1), 0, kFoldPhase, deadline)) return;
    if (!symm_exchange(p, 0, symm_bit(r - 1), result, deadline, first.next())) return;
    symm_copy(out, static_cast<const S*>(region(r - 1, f.steps)), part);
    symm_exchange(p, symm_bit(r - 1), 0, done, deadline);
    return;
  }
  if (f.folded_partner >= 0) {
    if (!symm_exchange(p, 0, symm_bit(f.folded_partner), kFoldPhase, deadline, first.next())) return;
    const S* theirs = region(f.folded_partner, 0);
    S* mine = region(r, 0);
    for (unsigned long long i = part.begin + threadIdx.x; i < part.end; i += blockDim.x)
      mine[i] = symm_combine<E, OP>(mine[i], theirs[i]);
  }
  for (int k = 0; k < f.steps; ++k) {
    const int partner = f.real_of(f.v ^ (1 << k));
    if (!symm_exchange(p, symm_bit(partner), symm_bit(partner), 2 + k, deadline, first.next())) return;
    const bool lower = (f.v >> k & 1) == 0;
    const S* a = region(lower ? r : partner, k);
    const S* b = region(lower ? partner : r, k);
    S* next = region(r, k + 1);
    const bool last = k == f.steps - 1, keep = !last || f.folded_partner >= 0;
    for (unsigned long long i = part.begin + threadIdx.x; i < part.end; i += blockDim.x) {
      S x = symm_combine<E, OP>(a[i], b[i]);
      if (last && avg) x = symm_average<E>(x, p.ranks);
      if (keep) next[i] = x;
      if (last) out[i] = x;
    }
  }
  if (f.steps == 0) symm_copy(out, in, part);  // one rank
  if (f.folded_partner >= 0 && !symm_exchange(p, symm_bit(f.folded_partner), 0, result, deadline)) return;
  symm_exchange(p, f.partners, f.partners | symm_bit(f.folded_partner), done, deadline);
}

// Each buffer holds the whole gathered message; step k copies the partner's 2^k virtual ranks' blocks.
template <class S>
__device__ void rd_allgather(const SymmPeers& p, const S* in, S* out, unsigned long long count,
                             unsigned long long deadline) {
  const int r = p.rank, n = p.ranks;
  const SymmFold f(n, r);
  const SymmRange part = symm_part(0, count, gridDim.x, blockIdx.x);
  S* mine = static_cast<S*>(p.buffers[r]);
  auto buffer = [&](int q) { return static_cast<const S*>(p.buffers[q]); };
  const unsigned result = fold_result_phase(f.steps), done = fold_done_phase(f.steps);
  SymmFirstWait first{p.skip_ready_wait != 0};
  const unsigned long long own = (unsigned long long)r * count;
  for (unsigned long long i = part.begin + threadIdx.x; i < part.end; i += blockDim.x) {
    const S x = in[i];  // in place, out[own + i] is in[i] itself
    mine[own + i] = x;
    out[own + i] = x;
  }
  if (f.folded) {
    if (!symm_exchange(p, symm_bit(r - 1), 0, kFoldPhase, deadline)) return;
    if (!symm_exchange(p, 0, symm_bit(r - 1), result, deadline, first.next())) return;
    rd_copy_blocks<S>(out, nullptr, buffer(r - 1), part, count, 0, r);
    rd_copy_blocks<S>(out, nullptr, buffer(r - 1), part, count, r + 1, n);
    symm_exchange(p, symm_bit(r - 1), 0, done, deadline);
    return;
  }
  if (f.folded_partner >= 0) {
    if (!symm_exchange(p, 0, symm_bit(f.folded_partner), kFoldPhase, deadline, first.next())) return;
    rd_copy_blocks(mine, out, buffer(f.folded_partner), part, count, r + 1, r + 2);
  }
  for (int k = 0; k < f.steps; ++k) {
    const int mask = 1 << k, theirs = (f.v ^ mask) & ~(mask - 1), partner = f.real_of(f.v ^ mask);
    if (!symm_exchange(p, symm_bit(partner), symm_bit(partner), 2 + k, deadline, first.next())) return;
    rd_copy_blocks(mine, out, buffer(partner), part, count, f.lo(theirs), f.lo(theirs + mask));
  }
  if (f.folded_partner >= 0 && !symm_exchange(p, symm_bit(f.folded_partner), 0, result, deadline)) return;
  symm_exchange(p, f.partners, f.partners | symm_bit(f.folded_partner), done, deadline);
}

template <class E, int OP>
__global__ void symm_rd_kernel(SymmPeers p, const void* send, void* recv, unsigned long long count, int flags) {
  using S = typename E::S;
  symm_op_begin(p);
  const unsigned long long deadline = symm_now_ns() + p.timeout_ns;
  const S* in = static_cast<const S*>(send);
  if (flags & 1)
    rd_allgather(p, in, static_cast<S*>(recv), count, deadline);
  else
    rd_allreduce<E, OP>(p, in, static_cast<S*>(recv), count, flags >> 1, deadline);
}

// `flags`: 1 for allgather, plus 2 for avg.
void symm_rd(const SymmPeers& p, int coll, const void* send, void* recv, unsigned long long count, int dtype, int op,
             void* stream) {
  if (count == 0) return;
  const bool gather = coll == int(Collective::allgather);
  SymmKernel k = PB_SYMM_PICK(symm_rd_kernel, dtype, gather ? int(ReduceOp::sum) : op);
  const int flags = (gather ? 1 : 0) | (!gather && op == int(ReduceOp::avg) ? 2 : 0);
  PB_LAUNCH(k, dim3(symm_blocks(count)), dim3(kSymmThreads), 0, stream)(p, send, recv, count, flags);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
