// Timing one collective the way nccl-tests does: warm-up, then n iterations of m aggregated operations issued
// back to back with one wait per timed batch (or per iteration / per operation, as -I and -z ask), and the
// per-rank result reduced over the ranks as -a asks. Shared by the benches and bench_harness_overhead.
#pragma once
#include <vector>

#include "collectives/communicator.h"

namespace parbench {

struct TimingConfig {
  int iters = 20, warmup = 1, agg = 1;
  int blocking = 0;       // -z: 0 one wait per batch, 1 per op, 2 per op + barrier, 3 per op timed between barriers
  bool per_iter = false;  // -I: one wait per iteration, statistics over iterations
  int per_iter_skip = 0;  // -K
  bool skip = false;      // test hook: this rank issues nothing (the others must time out)
  Communicator* world = nullptr;  // when given, each issued operation is a fault point (fault_injection.h)
};

// One rank's measurement. Times are per operation, in seconds.
struct Timing {
  double time = 0;      // wall time from the first issue to the last completion, / (n x m)
  double cpu_time = 0;  // host time spent issuing (before the batch's final wait), / (n x m)
  // -I: over iterations after the first K, per operation (an iteration's time / m).
  double min = 0, max = 0, p99 = 0, cv = 0;
};

Timing time_collective(Communicator& comm, const Algorithm& algo, const CollArgs& args, const TimingConfig& c);

// -a: 0 rank 0's value, 1 the mean, 2 the minimum, 3 the maximum over the ranks of `comm` (every field alike).
Timing reduce_over_ranks(Communicator& comm, const Timing& mine, int average);

// Statistics of -I over `samples` (seconds): min, max, 99th percentile (nearest rank), coefficient of variation.
void iteration_stats(std::vector<double> samples, Timing& out);

}  // namespace parbench
