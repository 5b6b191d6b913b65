// bench_harness_overhead's command line, apart from main() (which needs MPI) so that a fuzz target
// (tests/fuzz/fuzz_harness_overhead_cli.cpp) parses argument vectors through it in a build without MPI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/common_options.h"  // CLI::App, declared

namespace parbench::harness_overhead {

struct Options {
  std::string sizes = "1K,64M";
  int rounds = 7;
  double budget = 0.2;  // seconds per timed loop (iterations follow from a probe)
};

// Registers every option on `app` (bad values fail at parse time, naming the accepted form).
void add_options(CLI::App& app, Options& o);
// The message sizes of --sizes (each at most INT_MAX floats: an MPI count); UsageError naming the value and the
// accepted form.
std::vector<std::uint64_t> checked_sizes(const Options& o);

}  // namespace parbench::harness_overhead
