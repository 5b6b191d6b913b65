// Our allreduce kernels on NCCL's device API (nccl_dev_kernels.cu), and the device communicator they run on.
// Built only where NCCL's device API exists (PARBENCH_NCCL_DEVICE_API); they run only on real GPUs.
#pragma once
#include <cstddef>

namespace parbench {

// ncclDevCommCreate on `comm` (an ncclComm_t): one LSA barrier per kernel block, multimem (NVLink SHARP) when
// asked. Collective over the communicator's ranks; returns the ncclDevComm (owned by the caller: destroy it).
void* nccl_dev_comm_create(void* comm, bool multimem, int blocks);
void nccl_dev_comm_destroy(void* comm, void* dev_comm) noexcept;

// Allreduce (sum) of `count` elements of parbench::DType `dtype` from byte `send_offset` of window `send_window`
// into `recv_offset` of `recv_window` (ncclWindow_t; the same window and offset in place), on the device
// communicator `dev_comm` (an ncclDevComm from nccl_dev_comm_create), `blocks` blocks on `stream`. `variant` 1: LSA loads from every peer's window and
// stores into every peer's; 2: multimem loads that reduce in the switch and multimem stores. Each rank reduces
// its own contiguous share of the elements, so every rank's result is the same sum in rank order.
void nccl_dev_allreduce(int variant, void* send_window, std::size_t send_offset, void* recv_window,
                        std::size_t recv_offset, const void* dev_comm, std::size_t count, int dtype, int blocks,
                        void* stream);

}  // namespace parbench
