// -I's per-iteration report of one measured half: every rank's iteration times gathered to world rank 0, each
// process's ranks (its threads and GPUs) folded to their per-iteration maximum, the processes folded the same
// way, and nccl-tests' statistics over that maximum (its "i_* uses max over process rows").
#pragma once
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "timing.h"

namespace parbench {

// One rank's line of "# Using devices".
struct RankInfo {
  int rank = 0, group = 0, pid = 0, device = 0;
  std::string host, bus, name;  // bus: a PCI address on cuda, the device kind otherwise
};

struct PerIterResult {
  bool present = false;
  int skipped = 0;                // -K: the first iterations left out of `stats`
  IterStats stats;                // over times[skipped..]
  std::vector<double> times;      // every iteration (seconds): the maximum over the processes
  std::vector<std::vector<double>> per_process;  // each process's maximum over its ranks, by first rank; empty
                                                 // for one process (nccl-tests writes them only for several)
  std::vector<std::vector<double>> per_rank;     // every rank's times, by world rank (kept when asked)
};

// Collective over `world`. `mine` holds this rank's `iters` times (seconds); `ranks` is gather_rank_info's list
// (world rank 0's; a process is a host and pid); `keep_ranks`: per_rank filled too (--outliers). Meaningful on world
// rank 0, empty elsewhere.
PerIterResult gather_iteration_times(Communicator& world, const std::vector<double>& mine, int iters, int skip,
                                     const std::vector<RankInfo>& ranks, bool keep_ranks = false);

// The folding alone, for the tests: `all` is world-size rows of `iters` times in rank order.
PerIterResult fold_iteration_times(const std::vector<double>& all, int iters, int skip,
                                   const std::vector<RankInfo>& ranks);

}  // namespace parbench
