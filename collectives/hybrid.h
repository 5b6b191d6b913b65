// Several ranks per mpirun process (nccl-tests' -t threads x -g GPUs per process): rank = process x k + thread,
// each rank a thread of its process. Their messages go over the process's MPI communicator, the sending and
// receiving threads encoded in the tag, so MPI's matching keeps them apart. Host devices (cpu, simt) only.
#pragma once
#include <functional>

#include "collectives/communicator/communicator.h"

namespace parbench {

// Runs `body` on `k` ranks per process: called with the process's Communicator from run_ranks (its transport
// must be MPI's). A usage error is rethrown; any other failure of a rank ends the job (MPI_Abort) naming it.
void run_ranks_per_process(Communicator& process, int k, const std::function<void(Communicator&)>& body);

}  // namespace parbench
