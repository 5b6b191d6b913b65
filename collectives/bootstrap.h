// Starting the ranks: under mpirun one process per rank (MPI world, node-local rank, NCCL id broadcast over MPI);
// under torchrun or srun one process per rank meeting at a TCP store (the tcp bootstrap, bootstrap_tcp.cpp);
// otherwise N ranks as threads of this process. Either way every rank gets a Communicator.
#pragma once
#include <functional>
#include <string>

#include "collectives/communicator.h"
#include "collectives/launcher.h"
#include "core/device.h"

namespace parbench {

struct LaunchOptions {
  int ranks = 0;  // threads mode: how many (0 = 1); under a launcher 0 or the world size
  Device device;  // on cuda, rank r uses GPU (index + local rank) % GPUs
  double timeout_s = 300;
};

// The bootstrap --bootstrap chose (auto, mpi, tcp, threads; UsageError for another name): called once the
// command line is read, before anything asks how the ranks were launched.
void select_bootstrap(const std::string& name);
// The launch of this process for the chosen bootstrap (detect_launch on the environment, read once); UsageError
// for a launcher variable with a bad value.
const Launch& current_launch();
// True when this process is one rank of several processes (mpi or tcp bootstrap), not a process of rank threads.
bool launched_as_processes();
// "torchrun, tcp bootstrap", "mpirun, mpi bootstrap" or "threads": how run headers name the launch.
std::string launch_description();

// True when the launcher's environment says this process is one of an mpirun job (OpenMPI, PMIx or PMI).
bool launched_by_mpirun();
// World size and rank as the launcher says (before MPI starts): 1 and 0 for threads, and for launcher variables
// that current_launch() refuses (which reports them).
int launcher_world_size();
int launcher_world_rank();

// Why NCCL cannot run with `ranks_per_node` ranks on a node with `gpus` GPUs (naming the hand-written
// implementations that can run instead), or "" when every rank has a GPU of its own. PARBENCH_NCCL=off in the
// environment turns NCCL off (then the MPI transport carries the ranks' traffic under mpirun).
std::string nccl_gpu_refusal(int ranks_per_node, int gpus);

// Runs `body` once on every rank. Threads mode rethrows the first failure (the root cause rather than the ranks it
// stopped). Under mpirun a UsageError is rethrown (every rank sees the same options); any other failure is
// printed with its rank and ends the whole job with MPI_Abort. Under the tcp bootstrap a failure is rethrown
// naming the rank (this process then exits, and its peers' waits on it end as their connections close).
void run_ranks(const LaunchOptions& options, const std::function<void(Communicator&)>& body);

}  // namespace parbench
