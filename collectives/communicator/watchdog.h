// A watchdog thread for calls that cannot be interrupted (a blocking MPI_Allreduce, MPI_Wait): the call runs
// plainly, and if it is still running at its deadline the watchdog reports it (rank, operation, implementation,
// size) and ends the process through the caller's action. Polling the request against the clock instead costs
// more than a small operation itself (see README, bench_harness_overhead).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "collectives/communicator/algorithm.h"
#include "collectives/transport/transport.h"

namespace parbench {

// What a watched call is doing, for the report. The strings must outlive the watch.
struct WatchedCall {
  int rank = 0, ranks = 1;
  Collective coll = Collective::allreduce;
  std::string_view impl;
  std::size_t count = 0;  // per rank
  std::size_t bytes = 0;  // the larger of the rank's send and receive buffers
  DType dtype = DType::f32;
  double timeout_s = 0;
};

// Called (on the watchdog's thread) with the report when a watch expires; it must end the process.
using WatchdogAction = void (*)(const std::string& report);

// Arms this thread's watch for `call.timeout_s` seconds (a few stores: no clock read, no lock, no allocation after
// the thread's first watch); disarm() when the call returns. One watch per thread at a time.
void watchdog_arm(const WatchedCall& call, WatchdogAction action);
void watchdog_disarm();

struct MeasurementRecord;
// The report for `call`, naming what the calling thread was measuring (measurement.h) when `measurement` is given.
std::string watchdog_report(const WatchedCall& call, const MeasurementRecord* measurement = nullptr);

// RAII form.
class WatchGuard {
 public:
  WatchGuard(const WatchedCall& call, WatchdogAction action) { watchdog_arm(call, action); }
  ~WatchGuard() { watchdog_disarm(); }
  WatchGuard(const WatchGuard&) = delete;
  WatchGuard& operator=(const WatchGuard&) = delete;
};

}  // namespace parbench
