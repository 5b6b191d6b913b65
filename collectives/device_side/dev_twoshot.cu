// twoshot-dev's kernel: rank r owns shard r of the message (shards split as evenly as possible, so any count
// works). Each rank copies its input into its symmetric buffer and signals; reduces its own shard from every
// rank's buffer (in rank order) into its output and its buffer, and signals; copies every other shard from its
// owner's buffer, and signals that it is done reading. Each rank reads 2(n-1)/n of the message instead of
// oneshot's n-1 times it. One launch per allreduce.
#include "collectives/device_side/symm_device.h"

namespace parbench::PB_KERNEL_NS {

template <class E, int OP>
__global__ void symm_twoshot_kernel(SymmPeers p, const void* send, void* recv, unsigned long long n, int avg) {
  using S = typename E::S;
  symm_op_begin(p);
  const unsigned long long deadline = symm_now_ns() + p.timeout_ns;
  S* mine = static_cast<S*>(p.buffers[p.rank]);
  S* out = static_cast<S*>(recv);
  // This block's part of shard s.
  auto part = [&](int s) {
    const SymmRange shard = symm_part(0, n, unsigned(p.ranks), unsigned(s));
    return symm_part(shard.begin, shard.end - shard.begin, gridDim.x, blockIdx.x);
  };
  for (int s = 0; s < p.ranks; ++s) symm_copy(mine, static_cast<const S*>(send), part(s));
  if (!symm_barrier(p, 1, deadline, p.skip_ready_wait == 0)) return;
  // Nobody reads shard `rank` of this buffer until the next signal: the reduced values replace the input there.
  symm_reduce<E, OP>(p, part(p.rank), out, mine, avg);
  if (!symm_barrier(p, 2, deadline)) return;
  for (int s = 0; s < p.ranks; ++s)
    if (s != p.rank) symm_copy(out, static_cast<const S*>(p.buffers[s]), part(s));
  symm_barrier(p, 3, deadline);
}

void symm_twoshot_allreduce(const SymmPeers& p, const void* send, void* recv, unsigned long long count, int dtype,
                            int op, void* stream) {
  if (count == 0) return;
  SymmKernel k = PB_SYMM_PICK(symm_twoshot_kernel, dtype, op);
  const unsigned blocks = symm_blocks((count + unsigned(p.ranks) - 1) / unsigned(p.ranks));
  PB_LAUNCH(k, dim3(blocks), dim3(kSymmThreads), 0, stream)(p, send, recv, count, op == int(ReduceOp::avg) ? 1 : 0);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
