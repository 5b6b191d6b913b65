// Starting the ranks: under mpirun one process per rank (MPI world, node-local rank, NCCL id broadcast over MPI);
// under torchrun or srun one process per rank meeting at a TCP store (the tcp bootstrap, bootstrap_tcp.cpp);
// otherwise N ranks as threads of this process. Either way every rank gets a Communicator.
#pragma once
#include <functional>
#include <string>

#include "collectives/communicator/communicator.h"
#include "collectives/launch/launcher.h"
#include "core/device.h"

namespace parbench {

struct LaunchOptions {
  int ranks = 0;  // threads mode: how many (0 = 1); under a launcher 0 or the world size
  Device device;  // on cuda, rank r uses GPU (index + local rank) % GPUs
  double timeout_s = 300;
};

// Why NCCL cannot run with `ranks_per_node` ranks on a node with `gpus` GPUs (naming the hand-written
// implementations that can run instead), or "" when every rank has a GPU of its own. PARBENCH_NCCL=off in the
// environment turns NCCL off (then the MPI transport carries the ranks' traffic under mpirun).
std::string nccl_gpu_refusal(int ranks_per_node, int gpus);

// Runs `body` once on every rank. Threads mode rethrows the first failure (the root cause rather than the ranks it
// stopped). Under mpirun a UsageError is rethrown (every rank sees the same options); any other failure is
// printed with its rank and ends the whole job with MPI_Abort. Under the tcp bootstrap a failure is rethrown
// naming the rank (this process then exits, and its peers' waits on it end as their connections close).
void run_ranks(const LaunchOptions& options, const std::function<void(Communicator&)>& body);

// Node numbers from one key per world rank (a host name): ranks with the same key share a node, numbered 0.. in
// the order of their first ranks.
std::vector<int> number_nodes(const std::vector<std::string>& key_of_rank);
// "4 rank(s) on 2 node(s) (torchrun, tcp bootstrap), device cpu, transport shm+tcp": who runs where on `device`
// (as asked for: the ranks' GPUs differ), for a program's header; `nodes`: Communicator::nodes().
std::string world_summary(const Communicator& world, int nodes, const Device& device);

}  // namespace parbench
