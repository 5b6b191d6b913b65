#include "benchmarks/harness_overhead_options.h"

#include <CLI/CLI.hpp>
#include <limits>

#include "app/cli.h"
#include "base/error.h"
#include "app/sizes.h"

namespace parbench::harness_overhead {

void add_options(CLI::App& app, Options& o) {
  app.add_option("--sizes", o.sizes, "message sizes")->capture_default_str()->check(size_list_validator());
  app.add_option("--rounds", o.rounds, "alternating rounds (the median is shown)")->capture_default_str()
      ->check(in_range(1, 1000));
  app.add_option("--budget", o.budget, "seconds per timed loop")->capture_default_str()->check(greater_than(0));
}

std::vector<std::uint64_t> checked_sizes(const Options& o) {
  // MPI counts are ints: at most INT_MAX floats per message.
  constexpr std::uint64_t kMaxBytes = std::uint64_t(std::numeric_limits<int>::max()) * sizeof(float);
  std::vector<std::uint64_t> sizes = parse_size_list(o.sizes);
  for (std::uint64_t bytes : sizes)
    if (bytes > kMaxBytes)
      throw UsageError("--sizes '" + o.sizes + "': " + std::to_string(bytes) + " bytes is more floats than an MPI " +
                       "count holds; accepted: sizes up to " + std::to_string(kMaxBytes) + " bytes");
  return sizes;
}

}  // namespace parbench::harness_overhead
