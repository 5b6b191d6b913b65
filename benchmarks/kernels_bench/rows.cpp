// KernelRowsReporter: Google Benchmark's display plus our streaming CSV/JSON rows.
#include "benchmarks/kernels_bench/rows.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/interrupt.h"
#include "core/csv_columns.h"

namespace parbench {
namespace {

// Fixed columns (Google Benchmark's own CSV takes its counter columns from the first run, so a run with
// another counter set would not fit its header); counters a run lacks are empty.
std::vector<Column> kernel_columns() { return columns_of(csv::kernels::header); }

Cell counter(const benchmark::UserCounters& counters, const char* name) {
  const auto it = counters.find(name);
  if (it == counters.end() || !std::isfinite(it->second.value)) return Cell{};
  return Cell{double(it->second.value)};
}

}  // namespace

KernelRowsReporter::KernelRowsReporter(const std::string& csv_path, const std::string& json_path, bool resume)
    : display_(benchmark::CreateDefaultDisplayReporter()),
      rows_(kernel_columns(), csv_path, json_path, resume ? CsvRowFile::Mode::append : CsvRowFile::Mode::replace),
      csv_path_(csv_path) {}

bool KernelRowsReporter::done(const std::string& name) const {
  for (const auto& f : rows_.existing_rows())
    if (!f.empty() && f[0] == name) return true;
  return false;
}

bool KernelRowsReporter::ReportContext(const Context& context) { return display_->ReportContext(context); }

void KernelRowsReporter::ReportRuns(const std::vector<Run>& runs) {
  display_->ReportRuns(runs);
  for (const Run& r : runs) {
    // The registered name (op/version/device/dtype/shape), without Google Benchmark's "/min_time:..." tail, so
    // --resume can match it before the benchmark runs; aggregates (--benchmark_repetitions) keep their suffix.
    last_name_ = r.run_name.function_name + (r.run_type == Run::RT_Aggregate ? "_" + r.aggregate_name : "");
    const Cell batch = counter(r.counters, csv::kernels::batch);
    rows_.add_row({last_name_, std::int64_t(r.iterations), r.GetAdjustedRealTime(), r.GetAdjustedCPUTime(),
                   std::string(benchmark::GetTimeUnitString(r.time_unit)),
                   std::holds_alternative<double>(batch) ? Cell{std::int64_t(std::get<double>(batch))} : Cell{},
                   counter(r.counters, csv::kernels::counter_flops), counter(r.counters, csv::kernels::counter_bytes),
                   counter(r.counters, csv::kernels::counter_cublas),
                   counter(r.counters, csv::kernels::counter_cublaslt),
                   counter(r.counters, csv::kernels::counter_roofline), std::int64_t(r.error_occurred),
                   r.error_message});
  }
  if (const int sig = stop_signal()) {
    // Google Benchmark has no way to end its loop early; this benchmark's rows are on disk, so leave now.
    display_->Finalize();
    std::cout.flush();
    std::cerr << "bench_kernels: stopped by " << signal_name(sig) << " after " << last_name_ << "; "
              << rows_.table().rows().size() << " completed benchmarks"
              << (csv_path_.empty() ? "" : " are in " + csv_path_) << std::endl;
    std::fflush(nullptr);
    std::_Exit(exit_status_for_signal(sig));
  }
}

void KernelRowsReporter::Finalize() { display_->Finalize(); }

}  // namespace parbench
