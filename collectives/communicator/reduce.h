// The local combine step of hand-written collectives, dispatched per device: cpu reference, simt emulated kernel,
// or the CUDA kernel on a stream.
#pragma once
#include <cstddef>

#include "collectives/table/types.h"
#include "core/device.h"

namespace parbench {

// out[i] = x[i] op y[i], i < count; `out` may be `x` or `y` (not a part of either). avg combines as sum; finish it
// with reduce_divide.
void reduce_combine(const Device& d, void* out, const void* x, const void* y, std::size_t count, DType t,
                    ReduceOp op, void* stream = nullptr);
// buf[i] /= ranks (integer division for integer types): the last step of avg.
void reduce_divide(const Device& d, void* buf, std::size_t count, DType t, int ranks, void* stream = nullptr);

namespace cpu_ref {
void reduce_combine(void* out, const void* x, const void* y, std::size_t count, DType t, ReduceOp op);
void reduce_divide(void* buf, std::size_t count, DType t, int ranks);
}  // namespace cpu_ref

}  // namespace parbench
