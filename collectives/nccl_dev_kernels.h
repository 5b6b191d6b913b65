// Our allreduce kernels on NCCL's device API (nccl_dev_kernels.cu), and the device communicator they run on.
// Built only where NCCL's device API exists (PARBENCH_NCCL_DEVICE_API); they run only on real GPUs.
#pragma once
#include <cstddef>

namespace parbench {

struct NcclWindowRef;

// ncclDevCommCreate on `comm` (an ncclComm_t): one LSA barrier per kernel block, multimem (NVLink SHARP) when
// asked. Collective over the communicator's ranks; returns the ncclDevComm (owned by the caller: destroy it).
void* nccl_dev_comm_create(void* comm, bool multimem, int blocks);
void nccl_dev_comm_destroy(void* comm, void* dev_comm) noexcept;

// Allreduce (sum) of `count` elements of parbench::DType `dtype` from `send`'s window into `recv`'s (the same
// window and offset in place), `blocks` blocks on `stream`. `variant` 1: LSA loads from every peer's window and
// stores into every peer's; 2: multimem loads that reduce in the switch and multimem stores. Each rank reduces
// its own contiguous share of the elements, so every rank's result is the same sum in rank order.
void nccl_dev_allreduce(int variant, const NcclWindowRef& send, const NcclWindowRef& recv, std::size_t count,
                        int dtype, int blocks, void* stream);

}  // namespace parbench
