// Element arithmetic of the emulated NCCL: every ncclDataType_t it supports, every built-in ncclRedOp_t, and
// ncclAvg as NCCL computes it (floating types: each input times 1/n rounded to the type, then summed; integers:
// summed, then divided).
#pragma once
#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

namespace parbench::gpu_emu {

// Bytes of one element; 0 for a type the emulation does not support (why_unsupported says which).
std::size_t nccl_type_size(ncclDataType_t t);
std::string nccl_type_name(ncclDataType_t t);
std::string nccl_op_name(ncclRedOp_t op);
// "" when `t` and `op` can be reduced here, else why not.
std::string why_unsupported(ncclDataType_t t, ncclRedOp_t op);

// out[i] = inputs[0][i] op inputs[1][i] op ... (in rank order, rounded to the type after every step), count
// elements; `out` may alias none of the inputs.
void nccl_reduce(void* out, const std::vector<const void*>& inputs, std::size_t count, ncclDataType_t t,
                 ncclRedOp_t op);

}  // namespace parbench::gpu_emu
