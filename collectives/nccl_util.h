// NCCL helpers shared by the NCCL transport and the nccl library implementation (cuda builds with NCCL only).
#pragma once
#ifdef PARBENCH_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "collectives/transport.h"
#include "collectives/types.h"

namespace parbench {

ncclDataType_t nccl_type(DType t);
ncclRedOp_t nccl_op(ReduceOp op);
// Waits for `stream` by polling until `deadline`; on timeout aborts `comm` (so no rank stays stuck inside NCCL)
// and throws TimeoutError naming `what`. Also surfaces asynchronous NCCL errors.
void nccl_wait(ncclComm_t comm, cudaStream_t stream, Deadline deadline, const std::string& what);
// Whether nccl_wait aborted `comm` (which freed it): then its owner must neither destroy nor abort it.
bool nccl_was_aborted(ncclComm_t comm);

}  // namespace parbench
#endif
