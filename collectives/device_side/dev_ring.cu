// ring-dev's kernel: allreduce, reduce-scatter and all-gather as a ring through the symmetric buffers, one launch
// each. A rank's buffer holds two regions of the whole message: partial sums (A) and finished shards (B). In the
// reduce-scatter, at step k rank r adds its input to its left neighbour's partial sum of shard r - k - 1 (written
// by the neighbour at its step k - 1) and writes the result to its own A, so that the last step leaves shard r
// reduced over every rank (into B and the output); in the all-gather, at step k it copies shard r - k from its left
// neighbour's B. Only the neighbours synchronise: a flag to the right after each step, a wait for the left's
// before the next, and at the end a "done reading" to the left. Each block runs its own part of every shard, so the
// blocks' steps pipeline; each rank moves 2(n-1)/n of the message in n-1 + n-1 steps.
#include "collectives/device_side/symm_device.h"

namespace parbench::PB_KERNEL_NS {

constexpr int kRingAllreduce = 0, kRingReduceScatter = 1, kRingAllgather = 2;

// Rank r's input and output as views of the whole message: an all-gather's input and a reduce-scatter's output
// are only rank r's shard, which starts at element `own`.
template <class S>
struct RingView {
  const S* in;
  S* out;
  unsigned long long in_from, out_from;  // the whole message's index of in[0] and out[0]
  __device__ S input(unsigned long long i) const { return in[i - in_from]; }
  __device__ S& output(unsigned long long i) const { return out[i - out_from]; }
};

// Combines rank r's input with the left neighbour's partial sums over `c`; on the last step the finished shard
// goes to B (when an all-gather follows) and to the output.
template <class E, int OP>
__device__ void ring_add(const SymmPeers& p, SymmRange c, const RingView<typename E::S>& v,
                         const typename E::S* a_left, typename E::S* a_mine, typename E::S* b_mine, bool last,
                         int avg) {
  using S = typename E::S;
  for (unsigned long long i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    S x = E::store(combine_values<OP>(E::load(v.input(i)), E::load(a_left[i])));
    if (!last) {
      a_mine[i] = x;
      continue;
    }
    if (avg) x = E::store(E::load(x) / typename E::C(p.ranks));
    if (b_mine) b_mine[i] = x;
    v.output(i) = x;
  }
}

// `total`: elements of the whole message (allgather and reduce-scatter: ranks x count), shard s its part s.
// `flags`: the mode, plus 4 for avg.
template <class E, int OP>
__global__ void symm_ring_kernel(SymmPeers p, const void* send, void* recv, unsigned long long total, int flags) {
  using S = typename E::S;
  symm_op_begin(p);
  const int mode = flags & 3, avg = flags >> 2, n = p.ranks, r = p.rank;
  const int left = (r + n - 1) % n, right = (r + 1) % n;
  const unsigned long long deadline = symm_now_ns() + p.timeout_ns;
  auto part = [&](int s) {
    const SymmRange shard = symm_part(0, total, unsigned(n), unsigned((s % n + n) % n));
    return symm_part(shard.begin, shard.end - shard.begin, gridDim.x, blockIdx.x);
  };
  const unsigned long long own = symm_part(0, total, unsigned(n), unsigned(r)).begin;
  const RingView<S> v{static_cast<const S*>(send), static_cast<S*>(recv), mode == kRingAllgather ? own : 0,
                      mode == kRingReduceScatter ? own : 0};
  auto copy_input = [&](S* dst, SymmRange c) {
    for (unsigned long long i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) dst[i] = v.input(i);
  };
  auto copy_output = [&](const S* src, SymmRange c) {
    for (unsigned long long i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) v.output(i) = src[i];
  };
  if (n == 1) {
    const SymmRange all = part(0);
    for (unsigned long long i = all.begin + threadIdx.x; i < all.end; i += blockDim.x) v.output(i) = v.input(i);
    return;
  }
  S* a_mine = static_cast<S*>(p.buffers[r]);
  S* b_mine = a_mine + total;
  const S* a_left = static_cast<const S*>(p.buffers[left]);
  const S* b_left = a_left + total;
  unsigned phase = 1;
  const bool wait = p.skip_ready_wait == 0;
  if (mode == kRingAllgather) {
    copy_input(b_mine, part(r));
    copy_output(b_mine, part(r));
  } else {
    copy_input(a_mine, part(r - 1));  // what the right neighbour adds to first
  }
  if (!symm_step(p, right, left, phase, deadline, wait)) return;
  for (int k = 1; mode != kRingAllgather && k < n; ++k) {
    const bool last = k == n - 1;
    ring_add<E, OP>(p, part(r - k - 1), v, a_left, a_mine, mode == kRingAllreduce ? b_mine : nullptr, last, avg);
    if (last && mode == kRingReduceScatter) break;
    if (!symm_step(p, right, left, ++phase, deadline)) return;
  }
  for (int k = 1; mode != kRingReduceScatter && k < n; ++k) {
    const SymmRange c = part(r - k);
    symm_copy(b_mine, b_left, c);
    copy_output(b_left, c);
    if (k < n - 1 && !symm_step(p, right, left, ++phase, deadline)) return;
  }
  // Done reading the left neighbour's buffer; the right one must be done reading this one before it is reused.
  symm_step(p, left, right, ++phase, deadline);
}

void symm_ring(const SymmPeers& p, int coll, const void* send, void* recv, unsigned long long count, int dtype,
               int op, void* stream) {
  if (count == 0) return;
  const int mode = coll == int(Collective::allreduce) ? kRingAllreduce
                   : coll == int(Collective::reduce_scatter) ? kRingReduceScatter
                                                             : kRingAllgather;
  const unsigned long long total = mode == kRingAllreduce ? count : count * unsigned(p.ranks);
  SymmKernel k = PB_SYMM_PICK(symm_ring_kernel, dtype, mode == kRingAllgather ? int(ReduceOp::sum) : op);
  const unsigned blocks = symm_blocks((total + unsigned(p.ranks) - 1) / unsigned(p.ranks));
  const int flags = mode | (op == int(ReduceOp::avg) && mode != kRingAllgather ? 4 : 0);
  PB_LAUNCH(k, dim3(blocks), dim3(kSymmThreads), 0, stream)(p, send, recv, total, flags);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
