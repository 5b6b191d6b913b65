// bench_links' command line: its options and the checks that need no ranks (apart from main(), as every program's).
#pragma once
#include <cstdint>
#include <string>

#include "app/common_options.h"  // and CLI::App, declared

namespace parbench::links {

struct Options {
  CommonOptions common;
  int ranks = 0;  // threads mode: how many; under a launcher the world's
  std::string latency_size = "8";
  std::string bandwidth_size = "4M";
  int iters = 20;
  int warmup = 2;
  int passes = 1;
  double slow_factor = 2.0;
  std::string judge = "both";  // --judge: latency, bandwidth or both
  double timeout = 0;  // 0: 300 s
};

void add_options(CLI::App& app, Options& o);

// The message sizes in bytes, after the checks of every option that needs more than its own range (UsageError
// naming the value and the accepted form).
struct Sizes {
  std::uint64_t latency = 8, bandwidth = 4 << 20;
};
Sizes checked_sizes(const Options& o);

}  // namespace parbench::links
