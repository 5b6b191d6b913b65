// Fuzzes the collective benches' command line: the input, split at NUL bytes into an argument vector, goes
// through the options (CLI11 and our validators) and the plan they resolve to for three collectives (sizes,
// types, ops, roots, NCCL_TESTS_SPLIT rules) without running anything. A bad vector is a CLI11 ParseError or a
// UsageError.
#include "collective_bench/options.h"
#include "base/error.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench;
  BenchOptions o;
  std::string last;
  return pbfuzz::fuzz_command_line(
      "bench_allreduce", data, size,
      [&](CLI::App& app, const pbfuzz::Args& a) {
        last = a.args.back();
        return add_bench_options(app, o), true;
      },
      [&] {
        for (const auto c : {Collective::allreduce, Collective::broadcast, Collective::alltoall}) {
          try {  // one collective's refusal (a root, say) leaves the others to check
            (void)resolve_plan(c, o);
          } catch (const UsageError&) {
          }
        }
        (void)parse_split_rule(last.c_str());
      });
}
