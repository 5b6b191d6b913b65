// Fuzzes the collective benches' command line: the input, split at NUL bytes into an argument vector, goes
// through the options (CLI11 and our validators) and the plan they resolve to (sizes, types, ops, roots,
// NCCL_TESTS_SPLIT rules) without running anything. A bad vector is a CLI11 ParseError or a UsageError.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collective_bench/options.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"bench_allreduce"};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(current), current.clear();
    } else {
      current += char(data[i]);
    }
  }
  if (!current.empty()) args.push_back(current);
  if (args.size() > 64) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  for (const auto c : {parbench::Collective::allreduce, parbench::Collective::broadcast,
                       parbench::Collective::alltoall}) {
    CLI::App app{"fuzz", "bench_allreduce"};
    parbench::BenchOptions o;
    parbench::add_bench_options(app, o);
    try {
      app.parse(int(argv.size()), argv.data());
      (void)parbench::resolve_plan(c, o);
      (void)parbench::parse_split_rule(args.back().c_str());
    } catch (const CLI::ParseError&) {
    } catch (const parbench::UsageError&) {
    }
  }
  return 0;
}
