// NCCL helpers shared by the NCCL transport and the nccl library implementation (cuda builds with NCCL only).
#pragma once
#ifdef PARBENCH_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "collectives/transport/transport.h"
#include "collectives/table/types.h"

namespace parbench {

ncclDataType_t nccl_type(DType t);
ncclRedOp_t nccl_op(ReduceOp op);
// Waits for `stream` by polling until `deadline`; on timeout aborts every NCCL communicator of the process (so no
// stream stays stuck inside NCCL) and throws TimeoutError naming `what`. Also surfaces asynchronous NCCL errors.
void nccl_wait(ncclComm_t comm, cudaStream_t stream, Deadline deadline, const std::string& what);

// The registry of live communicators (nccl_comms.cpp). Every communicator made is tracked: a world one with no
// `split_from`, a split one with the communicator it was split from (the same rank's).
void nccl_track(ncclComm_t comm, ncclComm_t split_from = nullptr);
// The owner's end of a communicator: destroyed (nccl_release) or, for a failed rank whose peers may never match
// its operations, aborted (nccl_abandon); either only forgets one that a timeout aborted (and freed) already.
void nccl_release(ncclComm_t comm) noexcept;
void nccl_abandon(ncclComm_t comm) noexcept;
// Aborts every live communicator of the process (its ranks, in threads mode): all the work queued on them ends.
void nccl_abort_all() noexcept;
// True when a timeout aborted `comm` (do not touch it); otherwise its asynchronous error, polled.
bool nccl_aborted_else_poll(ncclComm_t comm, ncclResult_t& async_error);

}  // namespace parbench
#endif
