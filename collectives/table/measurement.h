// What a rank is measuring now (the user-level operation: "allreduce/ring of 1048576 bytes ..." or "training step
// 3 ..."), so that a timeout or failure deep inside a helper collective, a transport or the watchdog names what the
// user asked for rather than an internal call. One record per rank thread, readable from other threads.
#pragma once
#include <mutex>
#include <string>
#include <string_view>

#include "collectives/table/types.h"

namespace parbench {

// The measurement of one thread. Set a few times per row or step (a lock each), read only when something failed.
struct MeasurementRecord {
  mutable std::mutex mu;
  std::string what;                 // "" outside any measurement
  Collective coll = Collective::allreduce;
  std::string impl;                 // "" when the measurement is not a single collective (a training step)
  std::string text() const {
    std::lock_guard lock(mu);
    return what;
  }
};

// This thread's record (it lives as long as the process: the watchdog may read it after the thread ended).
MeasurementRecord& this_thread_measurement();

// Sets this thread's measurement for the scope's life and restores the previous one after it, unless an exception
// ends the scope: then the measurement stays, for the code that reports the failure.
class MeasurementScope {
 public:
  // A collective measured by a benchmark: `impl` is the implementation's name.
  MeasurementScope(std::string what, Collective c, std::string_view impl);
  // Anything else (a training step): no single collective is "the measured one".
  explicit MeasurementScope(std::string what);
  ~MeasurementScope();
  MeasurementScope(const MeasurementScope&) = delete;
  MeasurementScope& operator=(const MeasurementScope&) = delete;

 private:
  std::string saved_what_, saved_impl_;
  Collective saved_coll_;
  int uncaught_;
};

// True when collective `c` by `impl` is the measurement itself (the timeout then reports it as such), false for a
// helper call made while measuring something else (the reduction of the timings, a barrier).
bool is_measured_call(Collective c, std::string_view impl);

// "rank R: <what> did not finish ..." needs <what>: the measurement, or "" outside one.
std::string current_measurement();

}  // namespace parbench
