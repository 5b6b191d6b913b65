// tree-dev's kernel: binomial trees rooted at the root, as tree's, one launch each. Relative to the root
// (v = r - root), v's parent is v without its lowest set bit and its children are v + 1, v + 2, v + 4, ... below
// that bit. Broadcast: each rank waits for its parent's flag, copies the parent's buffer into its own (for its
// children) and its output, and flags its children. Reduce: each rank waits for its children's flags, adds their
// buffers to its input in the host tree's order and writes the partial result to its buffer (the root: to its
// output), and flags its parent. Allreduce: reduce to rank 0, then the result broadcast down the same tree, one
// kernel. Only the tree's edges synchronise; a parent's "done reading" releases each child, a child's its parent.
#include "collectives/device_side/symm_device.h"

namespace parbench::PB_KERNEL_NS {

// The rank's place in the tree, as real ranks: parent (-1 at the root) and children in the order tree adds them.
struct TreeLinks {
  int parent = -1;
  int children = 0;
  int child[kSymmMaxRanks] = {};
  unsigned child_mask = 0;
};

__device__ inline TreeLinks tree_links(int r, int root, int n) {
  TreeLinks t;
  const int v = (r - root + n) % n;
  const int low = v ? v & -v : 2 * kSymmMaxRanks;  // children sit below the lowest set bit
  if (v) t.parent = (v - low + root) % n;
  for (int m = 1; m < low && v + m < n; m <<= 1) {
    t.child[t.children++] = (v + m + root) % n;
    t.child_mask |= 1u << ((v + m + root) % n);
  }
  return t;
}

template <class S>
__device__ void tree_broadcast(const SymmPeers& p, const TreeLinks& t, const S* in, S* out, SymmRange part,
                               unsigned long long deadline) {
  S* mine = static_cast<S*>(p.buffers[p.rank]);
  const S* from = in;
  if (t.parent >= 0) {
    if (!symm_exchange(p, 0, symm_bit(t.parent), 1, deadline, p.skip_ready_wait == 0)) return;
    from = static_cast<const S*>(p.buffers[t.parent]);
  }
  for (unsigned long long i = part.begin + threadIdx.x; i < part.end; i += blockDim.x) {
    const S x = from[i];
    if (t.children) mine[i] = x;
    out[i] = x;
  }
  if (!symm_exchange(p, t.child_mask, 0, 1, deadline)) return;
  symm_exchange(p, symm_bit(t.parent), t.child_mask, 2, deadline);  // done reading the parent's buffer
}

// Reduce (to the root) or allreduce (root 0, then down the tree again).
template <class E, int OP>
__device__ void tree_reduce(const SymmPeers& p, const TreeLinks& t, bool all, const typename E::S* in,
                            typename E::S* out, SymmRange part, int avg, unsigned long long deadline) {
  using S = typename E::S;
  S* mine = static_cast<S*>(p.buffers[p.rank]);
  const unsigned parent = symm_bit(t.parent);
  if (!symm_exchange(p, 0, t.child_mask, 1, deadline, p.skip_ready_wait == 0)) return;
  for (unsigned long long i = part.begin + threadIdx.x; i < part.end; i += blockDim.x) {
    S x = in[i];
    for (int c = 0; c < t.children; ++c) x = symm_combine<E, OP>(x, static_cast<const S*>(p.buffers[t.child[c]])[i]);
    if (t.parent >= 0) {
      mine[i] = x;
      continue;
    }
    if (avg) x = symm_average<E>(x, p.ranks);
    if (all && t.children) mine[i] = x;
    out[i] = x;
  }
  if (!symm_exchange(p, parent, 0, 1, deadline)) return;
  if (!all) {  // done reading the children's buffers; the parent must be done with this one
    symm_exchange(p, t.child_mask, parent, 2, deadline);
    return;
  }
  if (t.parent >= 0) {  // the parent's phase 2: its result is ready (so it is done with this partial sum)
    if (!symm_exchange(p, 0, parent, 2, deadline)) return;
    const S* result = static_cast<const S*>(p.buffers[t.parent]);
    for (unsigned long long i = part.begin + threadIdx.x; i < part.end; i += blockDim.x) {
      const S x = result[i];
      if (t.children) mine[i] = x;
      out[i] = x;
    }
  }
  if (!symm_exchange(p, t.child_mask, 0, 2, deadline)) return;
  symm_exchange(p, parent, t.child_mask, 3, deadline);  // done reading the parent's result
}

// `flags`: symm_rooted_flags.
template <class E, int OP>
__global__ void symm_tree_kernel(SymmPeers p, const void* send, void* recv, unsigned long long count, int flags) {
  using S = typename E::S;
  const auto [c, root, avg, deadline, part] = symm_rooted_begin(p, count, flags);
  const TreeLinks t = tree_links(p.rank, root, p.ranks);
  const S* in = static_cast<const S*>(send);
  S* out = static_cast<S*>(recv);
  if (c == Collective::broadcast)
    tree_broadcast(p, t, in, out, part, deadline);
  else
    tree_reduce<E, OP>(p, t, c == Collective::allreduce, in, out, part, avg, deadline);
}

void symm_tree(const SymmPeers& p, int coll, int root, const void* send, void* recv, unsigned long long count,
               int dtype, int op, void* stream) {
  if (count == 0) return;
  const bool reduces = coll != int(Collective::broadcast);
  SymmKernel k = PB_SYMM_PICK(symm_tree_kernel, dtype, reduces ? op : int(ReduceOp::sum));
  if (coll == int(Collective::allreduce)) root = 0;
  const int flags = symm_rooted_flags(coll, root, reduces && op == int(ReduceOp::avg));
  PB_LAUNCH(k, dim3(symm_blocks(count)), dim3(kSymmThreads), 0, stream)(p, send, recv, count, flags);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
