// See measurement.h.
#include "collectives/table/measurement.h"

#include <exception>
#include <memory>
#include <mutex>
#include <vector>
#include <utility>

namespace parbench {

MeasurementRecord& this_thread_measurement() {
  // Never freed (the watchdog may read a record after its thread ended) but always reachable, from this list.
  thread_local MeasurementRecord* record = [] {
    static std::mutex mu;
    static auto* all = new std::vector<std::unique_ptr<MeasurementRecord>>;
    std::lock_guard lock(mu);
    return all->emplace_back(std::make_unique<MeasurementRecord>()).get();
  }();
  return *record;
}

MeasurementScope::MeasurementScope(std::string what, Collective c, std::string_view impl)
    : uncaught_(std::uncaught_exceptions()) {
  MeasurementRecord& r = this_thread_measurement();
  std::lock_guard lock(r.mu);
  saved_what_ = std::exchange(r.what, std::move(what));
  saved_impl_ = std::exchange(r.impl, std::string(impl));
  saved_coll_ = std::exchange(r.coll, c);
}

MeasurementScope::MeasurementScope(std::string what) : MeasurementScope(std::move(what), Collective::allreduce, "") {}

MeasurementScope::~MeasurementScope() {
  // Left by an exception: keep naming the measurement, so that the handler that reports the failure can say
  // what the rank was doing.
  if (std::uncaught_exceptions() > uncaught_) return;
  MeasurementRecord& r = this_thread_measurement();
  std::lock_guard lock(r.mu);
  r.what = std::move(saved_what_);
  r.impl = std::move(saved_impl_);
  r.coll = saved_coll_;
}

bool is_measured_call(Collective c, std::string_view impl) {
  const MeasurementRecord& r = this_thread_measurement();
  std::lock_guard lock(r.mu);
  return !r.impl.empty() && r.coll == c && r.impl == impl;
}

std::string current_measurement() { return this_thread_measurement().text(); }

}  // namespace parbench
