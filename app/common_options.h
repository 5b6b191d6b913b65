// The options every program shares, without CLI11: headers that carry them into many files (a benchmark's options
// struct) include this, not app/cli.h, whose CLI11 costs each file that includes it seconds of compile time.
#pragma once
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace parbench {

struct CommonOptions {
  std::string device = "auto";
  std::string csv;    // write results as CSV here
  std::string json;   // write results as JSON here
  std::string trace;  // write a Chrome/Perfetto trace here
  bool quiet = false;
};

// A positive size with K/M/G suffixes (--max-memory 16G); a bad one is a UsageError naming the option.
std::uint64_t parse_size_option(const std::string& option, const std::string& text);

}  // namespace parbench
