#include "benchmarks/memcpy_options.h"
#include "app/cli.h"

#include "base/error.h"
#include "app/sizes.h"

namespace parbench::memcpy_bench {

void add_options(CLI::App& app, Options& o) {
  add_common_options(app, o.common);
  app.add_option("--sizes", o.sizes, "sizes to copy: MIN:MAX:xF, MIN:MAX:+S or a list")
      ->check(size_list_validator())
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed copies per size")->capture_default_str()->check(integer_in(1, 1 << 30));
  app.add_option("-w,--warmup", o.warmup, "untimed copies per size")->capture_default_str()
      ->check(integer_in(0, 1 << 30));
  app.add_option("--max-memory", o.max_memory,
                 "refuse, before allocating, sizes whose buffers exceed BYTES (K/M/G; default: the device's memory)");
  app.add_flag("--resume", o.resume, "skip the sizes already in --csv (same device and bytes), append the rest");
}

std::vector<std::uint64_t> checked_sizes(const Options& o) {
  if (o.iters < 1) throw UsageError("--iters " + std::to_string(o.iters) + " must be >= 1");
  auto sizes = parse_size_list(o.sizes);
  if (o.resume && o.common.csv.empty()) throw UsageError("--resume needs --csv FILE: the sizes to skip are its rows");
  return sizes;
}

std::uint64_t max_memory_bytes(const Options& o) {
  return o.max_memory.empty() ? 0 : parse_size_option("--max-memory", o.max_memory);
}

}  // namespace parbench::memcpy_bench
