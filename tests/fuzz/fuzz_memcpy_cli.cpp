// Fuzzes bench_memcpy's command line: the input, split at NUL bytes into an argument vector, goes through its
// options (CLI11 and our validators) and the checks that need no device (sizes, --iters, --resume, --max-memory)
// without running anything. A bad vector is a CLI11 ParseError or a UsageError.
#include <CLI/CLI.hpp>

#include "benchmarks/memcpy_options.h"
#include "core/error.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pbfuzz::Args a;
  if (!pbfuzz::args_from_bytes("bench_memcpy", data, size, a)) return 0;
  CLI::App app{"fuzz", "bench_memcpy"};
  parbench::memcpy_bench::Options o;
  parbench::memcpy_bench::add_options(app, o);
  try {
    app.parse(a.argc(), a.argv.data());
    (void)parbench::memcpy_bench::checked_sizes(o);
    (void)parbench::memcpy_bench::max_memory_bytes(o);
  } catch (const CLI::ParseError&) {
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
