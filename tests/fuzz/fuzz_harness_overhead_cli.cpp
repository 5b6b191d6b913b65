// Fuzzes bench_harness_overhead's command line: the input, split at NUL bytes into an argument vector, goes
// through its options (CLI11 and our validators) and the size list, without MPI or any run. A bad vector is a
// CLI11 ParseError or a UsageError.
#include <CLI/CLI.hpp>

#include "benchmarks/harness_overhead_options.h"
#include "core/error.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench;
  pbfuzz::Args a;
  if (!pbfuzz::args_from_bytes("bench_harness_overhead", data, size, a)) return 0;
  CLI::App app{"fuzz", "bench_harness_overhead"};
  harness_overhead::Options o;
  harness_overhead::add_options(app, o);
  try {
    app.parse(a.argc(), a.argv.data());
    (void)harness_overhead::checked_sizes(o);
  } catch (const CLI::ParseError&) {
  } catch (const UsageError&) {
  }
  return 0;
}
