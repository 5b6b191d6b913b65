// Ranks of the emulated NCCL in different processes (mpirun, one emulated GPU per process): a POSIX shared-memory
// segment per communicator with a process-shared lock and condition, and a channel per ordered pair of ranks
// through which point-to-point data moves in chunks. Collectives are built on it in nccl.cpp.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace parbench::gpu_emu {

struct ShmClique;

// Maps (rank 0 creates) the segment `name` for `n` ranks and blocks until all joined; records every rank's
// process id and the node's GPU it runs on (`physical_gpu`). nullptr with `error` set on failure (a bad name, a
// size that disagrees, two ranks on one GPU, the wait timeout); every rank sees the same failure.
std::shared_ptr<ShmClique> shm_join(const std::string& name, int n, int rank, int physical_gpu, std::string* error);
int shm_size(const ShmClique& c);
// Whether every rank is a thread of this process (then the in-process communicator is used instead).
bool shm_all_in_this_process(const ShmClique& c);

// One transfer of a group: `bytes` from `data` to `peer`, or into `data` from `peer`.
struct ShmTransfer {
  int peer;
  bool send;
  void* data;
  std::size_t bytes;
};
// Runs the transfers together (each peer's in the order given) until all are done; a receive whose sender sends a
// different size fails the clique. False when the clique failed or was aborted (shm_failure says why).
bool shm_exchange(ShmClique& c, int me, const std::vector<ShmTransfer>& ops, const std::string& what);
void shm_fail(ShmClique& c, const std::string& why);
std::string shm_failure(ShmClique& c);

}  // namespace parbench::gpu_emu
