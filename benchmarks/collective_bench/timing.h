// Timing one collective the way nccl-tests does: warm-up, then n iterations of m aggregated operations issued
// back to back with one wait per timed batch (or per iteration / per operation, as -I and -z ask), and the
// per-rank result reduced over the ranks as -a asks. Shared by the benches and bench_harness_overhead.
#pragma once
#include <vector>

#include "collectives/communicator/communicator.h"

namespace parbench {

// -z, as nccl-tests 2.19 reads it.
enum Blocking : int {
  kBatched = 0,         // one wait per timed batch
  kWaitAndBarrier = 1,  // a wait and a barrier after each operation
  kWaitOnly = 2,        // a wait after each operation, no barrier
  kIterAlone = 3,       // each iteration: a barrier (not timed), its m operations, a wait; timed alone
};

struct TimingConfig {
  int iters = 20, warmup = 1, agg = 1;
  int blocking = kBatched;  // -z (Blocking); the caller maps 3 to 0 under -G, as nccl-tests does
  bool per_iter = false;    // -I: one wait per iteration, each iteration's time kept
  bool skip = false;        // test hook: this rank issues nothing (the others must time out)
  double late_s = 0;        // test hook: this rank sleeps this long before each timed iteration
  Communicator* world = nullptr;  // when given, each issued operation is a fault point (fault_injection.h)
  // -G: the n x m timed operations captured into a CUDA graph on the call's stream and the graph launched this many
  // times (0: no graph). Needs CollArgs::stream, an implementation whose capture_refusal is empty, -z 0 and no -I.
  int graph_launches = 0;
};

// One rank's measurement. Times are per operation, in seconds.
struct Timing {
  double time = 0;      // wall time from the first issue to the last completion, / (n x m)
  double cpu_time = 0;  // host time spent issuing (before the batch's final wait), / (n x m)
  std::vector<double> iter_times;  // -I: every iteration's time / m, in order (the -K skipped ones too)
  double own_time = 0;  // --outliers: the timed part outside the transport's waits, / (n x m)
};

Timing time_collective(Communicator& comm, const Algorithm& algo, const CollArgs& args, const TimingConfig& c);

// -a: 0 rank 0's value, 1 the mean, 2 the minimum, 3 the maximum over the ranks of `comm` (time and cpu_time;
// iter_times stay this rank's).
Timing reduce_over_ranks(Communicator& comm, const Timing& mine, int average);

// nccl-tests' statistics of -I over per-iteration times (seconds): p50 is the middle sample (index n/2 of the
// sorted ones), p95 and p99 the nearest rank, stdev over the n samples (not n - 1), cv_pct = stdev / avg x 100.
struct IterStats {
  double min = 0, max = 0, avg = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0, cv_pct = 0;
};
IterStats iteration_stats(std::vector<double> samples);

}  // namespace parbench
