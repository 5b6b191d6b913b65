// Fuzzes bench_harness_overhead's command line: the input, split at NUL bytes into an argument vector, goes
// through its options (CLI11 and our validators) and the size list, without MPI or any run. A bad vector is a
// CLI11 ParseError or a UsageError.
#include "benchmarks/harness_overhead_options.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::harness_overhead;
  Options o;
  return pbfuzz::fuzz_command_line(
      "bench_harness_overhead", data, size,
      [&](CLI::App& app, const pbfuzz::Args&) { return add_options(app, o), true; },
      [&] { (void)checked_sizes(o); });
}
