#include "benchmarks/harness_overhead_options.h"

#include <CLI/CLI.hpp>

#include "app/cli.h"
#include "core/sizes.h"

namespace parbench::harness_overhead {

void add_options(CLI::App& app, Options& o) {
  app.add_option("--sizes", o.sizes, "message sizes")->capture_default_str()->check(size_list_validator());
  app.add_option("--rounds", o.rounds, "alternating rounds (the median is shown)")->capture_default_str()
      ->check(in_range(1, 1000));
  app.add_option("--budget", o.budget, "seconds per timed loop")->capture_default_str()->check(greater_than(0));
}

std::vector<std::uint64_t> checked_sizes(const Options& o) { return parse_size_list(o.sizes); }

}  // namespace parbench::harness_overhead
