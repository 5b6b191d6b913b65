// bench_train's command line: its options and the checks that need no ranks, apart from main() so that a fuzz
// target (tests/fuzz/fuzz_train_cli.cpp) parses argument vectors through them without running anything. The
// checks that need the ranks (batches, grids, implementations) run in bench_train.cpp, on the ranks.
#pragma once
#include <string>
#include <vector>

#include "app/common_options.h"  // and CLI::App, declared
#include "benchmarks/train/train_run.h"
#include "core/device.h"

namespace parbench::train_bench {

// Registers every option on `app`, those of a run here and those of --simulate, --search and --calibrate (bad
// numbers and names fail at parse time, naming the accepted form).
void add_options(CLI::App& app, Options& o);

// Everything of a run here that can be refused without ranks (UsageError naming the value and the accepted
// form); fills o.train's model, optimizer, profile range and memory limit.
void validate(Options& o, const Device& dev);

// Options that only a prediction takes, refused without --simulate or --search.
void validate_prediction_options(const Options& o, const CLI::App& app);

// --simulate / --search: the model options into o.train (UsageError for a bad model).
void prepare_prediction(Options& o);

}  // namespace parbench::train_bench
