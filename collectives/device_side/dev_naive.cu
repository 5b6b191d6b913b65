// naive-dev's kernel: every collective as direct reads of the peers' symmetric buffers, one launch each, the
// device-side form of naive. Each rank copies what its peers need (its input, or the root's whole input) into its
// buffer and signals the ranks that read it; waits for the ranks it reads; reads (and reduces, in rank order) what
// it needs straight from their buffers into its output; then tells those ranks it is done reading and waits until
// its own readers are. Rooted collectives flag the root only (one reader or one writer); the others every peer.
#include "collectives/device_side/symm_device.h"

namespace parbench::PB_KERNEL_NS {

// Who reads this rank's buffer and whose buffers this rank reads, as rank bit masks.
struct NaiveLinks {
  unsigned readers, sources;
};

__device__ inline NaiveLinks naive_links(Collective c, int r, int n, int root) {
  const unsigned others = ((1u << n) - 1u) & ~(1u << r);
  switch (c) {
    case Collective::broadcast:
    case Collective::scatter: return r == root ? NaiveLinks{others, 0} : NaiveLinks{0, 1u << root};
    case Collective::reduce:
    case Collective::gather: return r == root ? NaiveLinks{0, others} : NaiveLinks{1u << root, 0};
    case Collective::sendrecv: return {symm_bit((r + 1) % n) & others, symm_bit((r + n - 1) % n) & others};
    default: return {others, others};
  }
}

// Per-rank blocks of `count` elements in the symmetric buffer: the whole send buffer of scatter (the root's),
// reduce-scatter and alltoall, else the input alone.
__device__ inline int naive_buffer_blocks(Collective c, int n) {
  return c == Collective::scatter || c == Collective::reduce_scatter || c == Collective::alltoall ? n : 1;
}

// This block's part of per-rank block s: the same part of every block, so that in place a block overwrites only
// what it copied itself.
__device__ inline SymmRange naive_piece(SymmRange part, unsigned long long count, int s) {
  const unsigned long long at = (unsigned long long)s * count;
  return {at + part.begin, at + part.end};
}

// The output from the peers' buffers, after their signal.
template <class E, int OP>
__device__ void naive_read(const SymmPeers& p, Collective c, int root, typename E::S* recv, unsigned long long count,
                           SymmRange part, int avg) {
  using S = typename E::S;
  const int n = p.ranks, r = p.rank;
  auto buffer = [&](int q) { return static_cast<const S*>(p.buffers[q]); };
  switch (c) {
    case Collective::broadcast: return symm_copy(recv, buffer(root), part);
    case Collective::reduce:
      if (r == root) symm_reduce<E, OP>(p, part, recv, nullptr, avg);
      return;
    case Collective::allreduce: return symm_reduce<E, OP>(p, part, recv, nullptr, avg);
    case Collective::gather:
    case Collective::allgather:
      if (c == Collective::gather && r != root) return;
      for (int q = 0; q < n; ++q) symm_copy(recv + (unsigned long long)q * count, buffer(q), part);
      return;
    case Collective::scatter: return symm_copy(recv, buffer(root) + (unsigned long long)r * count, part);
    case Collective::reduce_scatter:
      return symm_reduce<E, OP>(p, naive_piece(part, count, r), recv, nullptr, avg, (unsigned long long)r * count);
    case Collective::alltoall:
      for (int q = 0; q < n; ++q)
        symm_copy(recv + (unsigned long long)q * count, buffer(q) + (unsigned long long)r * count, part);
      return;
    case Collective::sendrecv: return symm_copy(recv, buffer((r + n - 1) % n), part);
    default: return;  // not implemented: refused on the host
  }
}

// `flags`: symm_rooted_flags.
template <class E, int OP>
__global__ void symm_naive_kernel(SymmPeers p, const void* send, void* recv, unsigned long long count, int flags) {
  using S = typename E::S;
  const auto [c, root, avg, deadline, part] = symm_rooted_begin(p, count, flags);
  const NaiveLinks links = naive_links(c, p.rank, p.ranks, root);
  const S* in = static_cast<const S*>(send);
  // Only the root's input matters in a broadcast or scatter (the others may have none).
  const bool stages = !((c == Collective::broadcast || c == Collective::scatter) && p.rank != root);
  for (int s = 0; stages && s < naive_buffer_blocks(c, p.ranks); ++s)
    symm_copy(static_cast<S*>(p.buffers[p.rank]), in, naive_piece(part, count, s));
  if (!symm_exchange(p, links.readers, links.sources, 1, deadline, p.skip_ready_wait == 0)) return;
  naive_read<E, OP>(p, c, root, static_cast<S*>(recv), count, part, avg);
  // Done reading the sources' buffers; the readers must be done with this one before it is reused.
  symm_exchange(p, links.sources, links.readers, 2, deadline);
}

void symm_naive(const SymmPeers& p, int coll, int root, const void* send, void* recv, unsigned long long count,
                int dtype, int op, void* stream) {
  if (count == 0) return;
  const bool reduces = is_reduction(Collective(coll));
  SymmKernel k = PB_SYMM_PICK(symm_naive_kernel, dtype, reduces ? op : int(ReduceOp::sum));
  const int flags = symm_rooted_flags(coll, root, reduces && op == int(ReduceOp::avg));
  PB_LAUNCH(k, dim3(symm_blocks(count)), dim3(kSymmThreads), 0, stream)(p, send, recv, count, flags);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
