// bench_kernels' result files: a Google Benchmark reporter that shows runs on the usual display (console, or
// --benchmark_format's) and appends each finished benchmark to --csv (one write per row) and --json (rewritten
// atomically), so an interrupted run keeps every benchmark that completed. A stop signal (app/interrupt.h) ends
// the program after the benchmark in progress, with one line naming it.
#pragma once
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "app/output.h"

namespace parbench {

class KernelRowsReporter : public benchmark::BenchmarkReporter {
 public:
  // Checks the paths now (UsageError), before any benchmark runs; `resume` keeps the CSV's rows.
  KernelRowsReporter(const std::string& csv_path, const std::string& json_path, bool resume);
  // --resume: whether a benchmark of this name is in the CSV already.
  bool done(const std::string& name) const;
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;
  // The name of the last benchmark reported (where an interrupted run stopped).
  const std::string& last_name() const { return last_name_; }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  StreamingTable rows_;
  std::string last_name_, csv_path_;
};

}  // namespace parbench
