// The tcp bootstrap (ranks launched by torchrun or srun, meeting at rank 0's TCP store) and the pieces of the
// bootstrap it shares with the mpi and threads ones (bootstrap.cpp).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/bootstrap.h"

namespace parbench {

// Runs `body` as rank l.world_rank of l.world_size: rank 0 serves the store at l.store_port; every rank joins it,
// learns its node-local rank from the ranks' host names, connects the TCP mesh and, on GPUs, NCCL (its id through
// the store). UsageError as it is; any other failure rethrown as Error naming the rank (and what it measured).
void run_tcp(const LaunchOptions& o, const Launch& l, const std::function<void(Communicator&)>& body);

#ifdef PARBENCH_HAVE_MPI
// Under mpirun, the host transport PARBENCH_HOST_TRANSPORT asks for: "mpi" (unset: MPI's point-to-point) or "shm"
// (the tcp bootstrap's mesh, made here with a store that rank 0 serves on a free port: shared-memory rings between
// the processes of a node, TCP between nodes), with the MPI transport over `world_comm` (an MPI_Comm as void*) as
// its companion for MPI's own collectives. `same_node` by world rank. UsageError for another value.
std::unique_ptr<Transport> host_transport_under_mpi(const void* world_comm, int rank, int size,
                                                    const std::vector<bool>& same_node, const Device& d,
                                                    double timeout_s);
#endif

// PARBENCH_NCCL=off: the host transport and MPI's own collectives on GPUs even where NCCL could run. Why NCCL is
// off, or "" (UsageError for a value other than on and off).
std::string nccl_turned_off();
// GPUs this process sees (0 without CUDA).
int gpu_count();
// The device of node-local rank `local_rank` (made current on cuda): GPUs round robin from the one --device names.
Device rank_device(const Device& base, int local_rank, int gpus);

}  // namespace parbench
