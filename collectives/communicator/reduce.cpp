// Per-device dispatch of the reduction step: the cpu reference, or the same kernel on simt and on the GPU.
#include "collectives/communicator/reduce.h"

#include "collectives/communicator/reduce_kernels.h"
#include "base/error.h"

namespace parbench {

void reduce_combine(const Device& d, void* out, const void* x, const void* y, std::size_t count, DType t,
                    ReduceOp op, [[maybe_unused]] void* stream) {
  if (count == 0) return;
  switch (d.kind) {
    case DeviceKind::cpu: return cpu_ref::reduce_combine(out, x, y, count, t, op);
    case DeviceKind::simt:
      return simt_kernels::reduce_combine(out, x, y, count, int(t), int(op), stream);
    case DeviceKind::cuda:
#ifdef PARBENCH_HAVE_CUDA
      return cuda_kernels::reduce_combine(out, x, y, count, int(t), int(op), stream);
#else
      throw Error("this build has no CUDA support");
#endif
  }
}

void reduce_divide(const Device& d, void* buf, std::size_t count, DType t, int ranks, [[maybe_unused]] void* stream) {
  if (count == 0) return;
  switch (d.kind) {
    case DeviceKind::cpu: return cpu_ref::reduce_divide(buf, count, t, ranks);
    case DeviceKind::simt:
      return simt_kernels::reduce_divide(buf, count, int(t), ranks, stream);
    case DeviceKind::cuda:
#ifdef PARBENCH_HAVE_CUDA
      return cuda_kernels::reduce_divide(buf, count, int(t), ranks, stream);
#else
      throw Error("this build has no CUDA support");
#endif
  }
}

}  // namespace parbench
