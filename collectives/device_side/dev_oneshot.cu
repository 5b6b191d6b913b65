// oneshot-dev's kernel: each rank copies its input into its symmetric buffer, signals, waits for every peer's
// signal, then reads every rank's buffer and reduces in rank order; a second signal says it is done reading, so
// the next operation may overwrite the buffers. One launch per allreduce.
#include "collectives/device_side/symm_device.h"

namespace parbench::PB_KERNEL_NS {

template <class E, int OP>
__global__ void symm_oneshot_kernel(SymmPeers p, const void* send, void* recv, unsigned long long n, int avg) {
  using S = typename E::S;
  symm_op_begin(p);
  const unsigned long long deadline = symm_now_ns() + p.timeout_ns;
  const SymmRange r = symm_part(0, n, gridDim.x, blockIdx.x);
  symm_copy(static_cast<S*>(p.buffers[p.rank]), static_cast<const S*>(send), r);
  if (!symm_barrier(p, 1, deadline, p.skip_ready_wait == 0)) return;
  symm_reduce<E, OP>(p, r, static_cast<S*>(recv), nullptr, avg);
  symm_barrier(p, 2, deadline);
}

void symm_oneshot_allreduce(const SymmPeers& p, const void* send, void* recv, unsigned long long count, int dtype,
                            int op, void* stream) {
  if (count == 0) return;
  SymmKernel k = PB_SYMM_PICK(symm_oneshot_kernel, dtype, op);
  PB_LAUNCH(k, dim3(symm_blocks(count)), dim3(kSymmThreads), 0, stream)(p, send, recv, count,
                                                                         op == int(ReduceOp::avg) ? 1 : 0);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
