// bench_train: trains the MLP or the GPT-style model under one parallelism scheme and reports step time,
// throughput, model FLOP/s, memory per category, communication per step and, with --check, the largest
// parameter difference from a single-rank run on the same global batch. Here: the run's steps; the options and
// their checks are in train/options.cpp, the measurement in train/measure.cpp, the report in train/run_report.cpp.
#include <iostream>
#include <optional>

#include "app/interrupt.h"
#include "app/program.h"
#include "collectives/communicator/fault_injection.h"
#include "benchmarks/train/options.h"
#include "benchmarks/train/runnable.h"
#include "benchmarks/train/train_run.h"
#include "collectives/bootstrap.h"
#include "base/error.h"
#include "app/sizes.h"
#include "base/text.h"
#include "parallel/schedule/schedule.h"
#include "parallel/schemes/model_parallel.h"
#include "profiles/trace.h"

using namespace parbench;
using namespace parbench::train_bench;

namespace {

// "trace.json" -> "trace.rank3.json": under mpirun every process records its own rank.
std::string per_rank_path(const std::string& path, int rank) {
  const auto slash = path.find_last_of('/'), dot = path.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string tag = ".rank" + std::to_string(rank);
  return has_ext ? path.substr(0, dot) + tag + path.substr(dot) : path + tag;
}

// Refuses bad batches, grids and implementations before anything is allocated.
void validate_on_ranks(const TrainConfig& t, Communicator& comm) {
  if (t.scheme->model_parallel) plan_model_parallel(t, comm.size());
  else accumulation_steps(t, comm.size());
  if (t.impl) {  // a library that cannot run here at all (nccl on cpu, mpi without mpirun)
    if (std::string why = t.impl->unsupported(Collective::allreduce, comm); !why.empty())
      throw UsageError("--impl " + std::string(t.impl->name()) + " cannot run here: " + why);
  }
}

int run(Options& o, const CLI::App& app) {
  if (o.list_runnable) {
    print_runnable(std::cout);
    return 0;
  }
  validate_prediction_options(o, app);
  if (!o.calibrate.empty()) return calibrate(o);
  if (o.simulate || o.search) {
    prepare_prediction(o);
    return o.simulate ? simulate(o) : search(o);
  }
  std::string why;
  const Device dev = resolve_device(o.common.device, &why);
  if (!why.empty() && !o.common.quiet) std::cerr << why << "\n";
  validate(o, dev);
  if (o.train.partition.kind == PartitionRequest::Kind::balanced) o.train.partition.costs = predicted_unit_costs(o, dev);
  fault_plan();  // a bad PARBENCH_FAULT is a usage error before any work
  check_output_paths({{"--csv", o.common.csv}, {"--json", o.common.json}, {"--trace", o.common.trace}});
  // Rank 0's process writes the row; an existing CSV with another header is refused now, not after training.
  std::optional<CsvRowFile> csv;
  if (!o.common.csv.empty() && launcher_world_rank() == 0)
    csv.emplace("--csv", o.common.csv, csv_header(), CsvRowFile::Mode::append);
  // A row needs the whole run: a signal abandons it (nothing half-measured is written) and says what ran.
  const bool writer = launcher_world_rank() == 0;
  install_stop_handlers(writer ? "bench_train: stopped by SIGNAL during " + o.model + " training under scheme " +
                                     std::string(o.train.scheme->name) + " (" + std::to_string(o.steps) +
                                     " timed steps); abandoned, no row written (a row needs the whole run)"
                               : "",
                        StopMode::abandon);
  if (!o.common.trace.empty()) TraceRecorder::instance().enable();
  RunResult result;
  int process_rank = 0;
  run_ranks({o.ranks, dev, o.timeout}, [&](Communicator& comm) {
    if (launched_as_processes()) {
      process_rank = comm.rank();
      if (comm.rank() == 0 && !o.common.quiet) std::cerr << "launch: " << world_summary(comm, comm.nodes(), dev) << "\n";
    }
    validate_on_ranks(o.train, comm);
    run_rank(o, comm, result);
  });
  if (result.world == 0) {  // not rank 0 of an mpirun job: rank 0 reports; each process writes its own trace
    if (!o.common.trace.empty()) TraceRecorder::instance().write(per_rank_path(o.common.trace, process_rank));
    return 0;
  }
  return report(o, dev, result, csv ? &*csv : nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  return run_program({"Train a model under a parallelism scheme and measure it", "bench_train"},
                     [&](CLI::App& app) { add_options(app, o); }, argc, argv,
                     [&](const CLI::App& app) { return run(o, app); });
}
