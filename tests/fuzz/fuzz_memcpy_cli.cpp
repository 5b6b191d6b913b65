// Fuzzes bench_memcpy's command line: the input, split at NUL bytes into an argument vector, goes through its
// options (CLI11 and our validators) and the checks that need no device (sizes, --iters, --resume, --max-memory)
// without running anything. A bad vector is a CLI11 ParseError or a UsageError.
#include "benchmarks/memcpy_options.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::memcpy_bench;
  Options o;
  return pbfuzz::fuzz_command_line(
      "bench_memcpy", data, size, [&](CLI::App& app, const pbfuzz::Args&) { return add_options(app, o), true; },
      [&] {
        (void)checked_sizes(o);
        (void)max_memory_bytes(o);
      });
}
