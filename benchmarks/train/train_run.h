// bench_train's three steps: validate the options (bench_train.cpp), measure on every rank (measure.cpp) and
// report on rank 0 (run_report.cpp), sharing the options and what was measured.
#pragma once
#include <array>
#include <map>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "core/allocator.h"
#include "core/stats.h"
#include "app/output.h"
#include "app/report.h"
#include "core/device.h"
#include "parallel/train.h"
#include "predict/predict.h"
#include "benchmarks/train/options.h"

namespace parbench::train_bench {

// What one rank measured, gathered to every rank.
struct RankStats {
  double peak_bytes = 0;
  MemSplit at_peak{};   // bytes per category when the total peaked
  MemSplit estimate{};  // closed-form parameter, gradient and optimizer bytes
  double comm_bytes = 0, host_device_bytes = 0;  // in the last step
  // Pipelines: compute time and the step's span (max over ranks), summed over timed steps; the median over timed
  // steps of 1 - busy / span; the most microbatches in flight.
  double busy_ms = 0, span_ms = 0, bubble = 0, in_flight = 0;
  // Medians over timed steps of the step thread's host waits, launches and raw device allocations, and of the
  // fraction of communication-stream time that ran under computation (core/stream_timeline.h).
  double host_waits = 0, launches = 0, device_mallocs = 0, overlap = 0;

  static constexpr std::size_t kScalars = 11;
  static constexpr std::size_t kDoubles = kScalars + 2 * kMemCategories;
  std::array<double, kDoubles> pack() const;
  static RankStats unpack(const double* values);
};

struct RunResult {
  std::vector<double> step_ms;               // per timed step, slowest rank
  std::vector<double> step_bubble;           // per timed step, mean over ranks (pipeline schemes)
  std::vector<double> step_bubble_replayed;  // per timed step, the same from the replay of the measured actions
  std::vector<RankStats> ranks;
  double loss = 0;
  std::optional<double> max_diff;  // --check: largest relative parameter difference from the single-rank run
  ParallelShape shape;
  bool pipeline = false;
  int world = 0;
};

// The training CSV's columns (measured and predicted rows share them), a memory category's column, and a row
// from cells by column name (Error for a name that is not a column; missing names stay empty).
const std::vector<Column>& train_csv_columns();
std::string memory_column(MemCategory c);
std::vector<Cell> row_by_name(const std::vector<Column>& columns, const std::map<std::string, Cell>& cells);

// --simulate (simulate_command.cpp) and --search (search_command.cpp): predictions, printed and written like a
// run's rows.
int simulate(const Options& o);
int search(const Options& o);
int calibrate(const Options& o);  // --calibrate: the fit and its error per group
// Shared by both: the layout of a run's options on `gpus` GPUs of `sys` (UsageError as a run would refuse
// it; --partition balanced balances on sys's costs), and a predicted row's cells by CSV column.
predict::Layout layout_for(const Options& o, int gpus, const predict::SystemModel& sys);
std::map<std::string, Cell> predicted_cells(const predict::Layout& l, const predict::Prediction& p,
                                            const predict::SystemModel& sys,
                                            const predict::StepRange* range = nullptr);

// Trains on this rank; rank 0 fills `out`.
void run_rank(const Options& o, Communicator& comm, RunResult& out);

// The CSV header (checked against an existing file before any work).
std::string csv_header();

// Prints and writes rank 0's results (the row to `csv` when given); returns the exit status (1 when
// --check-tolerance is exceeded).
int report(const Options& o, const Device& device, const RunResult& result, CsvRowFile* csv);

}  // namespace parbench::train_bench
