// Starting the ranks: under mpirun one process per rank (MPI world, node-local rank, NCCL id broadcast over MPI);
// otherwise N ranks as threads of this process. Either way every rank gets a Communicator.
#pragma once
#include <functional>
#include <string>

#include "collectives/communicator.h"
#include "core/device.h"

namespace parbench {

struct LaunchOptions {
  int ranks = 0;  // threads mode: how many (0 = 1); under mpirun 0 or the world size
  Device device;  // on cuda, rank r uses GPU (index + local rank) % GPUs
  double timeout_s = 300;
};

// True when the launcher's environment says this process is one of an mpirun job (OpenMPI, PMIx or PMI).
bool launched_by_mpirun();
// World size and rank as the launcher says (before MPI starts): 1 and 0 without mpirun.
int launcher_world_size();
int launcher_world_rank();

// Why NCCL cannot run with `ranks_per_node` ranks on a node with `gpus` GPUs (naming the hand-written
// implementations that can run instead), or "" when every rank has a GPU of its own. PARBENCH_NCCL=off in the
// environment turns NCCL off (then the MPI transport carries the ranks' traffic under mpirun).
std::string nccl_gpu_refusal(int ranks_per_node, int gpus);

// Runs `body` once on every rank. Threads mode rethrows the first failure (the root cause rather than the ranks it
// stopped). Under mpirun a UsageError is rethrown (every rank sees the same options); any other failure is
// printed with its rank and ends the whole job with MPI_Abort.
void run_ranks(const LaunchOptions& options, const std::function<void(Communicator&)>& body);

}  // namespace parbench
