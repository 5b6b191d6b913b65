// bench_memcpy's command line: its options and the checks that need no device, apart from main() so that a fuzz
// target (tests/fuzz/fuzz_memcpy_cli.cpp) parses argument vectors through them without running anything.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/common_options.h"  // and CLI::App, declared

namespace parbench::memcpy_bench {

struct Options {
  CommonOptions common;
  std::string sizes = "1K:64M:x4";
  int iters = 20;
  int warmup = 2;
  bool resume = false;
  std::string max_memory;  // --max-memory BYTES
};

// Registers every option on `app` (bad numbers and size lists fail at parse time, naming the accepted form).
void add_options(CLI::App& app, Options& o);

// The sizes to copy, after the checks of --iters, --sizes and --resume (UsageError naming the value).
std::vector<std::uint64_t> checked_sizes(const Options& o);

// --max-memory in bytes (0: not given, the device's memory is the limit); UsageError for a bad size.
std::uint64_t max_memory_bytes(const Options& o);

}  // namespace parbench::memcpy_bench
