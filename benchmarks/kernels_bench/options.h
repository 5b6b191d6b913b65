// bench_kernels' command line: its options, the shapes they pick and the checks that need no device, apart from
// main() so that a fuzz target (tests/fuzz/fuzz_kernels_cli.cpp) parses argument vectors through them without
// running anything. Google Benchmark's own --benchmark_* flags are not ours: main() takes them out first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/common_options.h"  // and CLI::App, declared
#include "base/dtype.h"
#include "kernels/op_params.h"

namespace parbench::kernels_bench {

// The named shapes (kernels/op_params.h); --shape picks any of them on any device.
using optable::GptShape;
using optable::gpt_shapes;

// The shapes to run: the one named by --shape, or the device's defaults when none is named (UsageError naming
// an unknown shape and the accepted ones).
std::vector<GptShape> shapes_to_run(const std::string& name, bool cuda);
// Whether --shape gives explicit dimensions (holds '=') rather than a name.
bool is_explicit_shape(const std::string& text);
// "B=4,T=1000,C=768,NH=12,V=50257": every key once, in any order, each value an integer >= 1, NH dividing C and
// the workloads' element counts within int; named "B4_T1000_C768_NH12_V50257" (kernels_bench/shape.cpp). UsageError
// naming the bad item and the accepted form.
GptShape parse_explicit_shape(const std::string& text);

// A linear layer to time on its own (--linear TOKENSxINxOUT): a (TOKENS, IN) input times an (OUT, IN) weight.
struct LinearShape {
  int tokens = 0, in = 0, out = 0;
  std::string name() const;  // "T256_I64_O192"
};
// Each item "TOKENSxINxOUT" (integers >= 1, each product of two within int); UsageError naming the bad item and the
// accepted form.
std::vector<LinearShape> parse_linears(const std::vector<std::string>& items);

struct Options {
  CommonOptions common;
  std::vector<std::string> linears;  // --linear: these linears' GEMMs instead of the op table
  std::vector<std::string> dtypes{"f32", "bf16"};
  std::string filter_shapes;
  double peak_tflops = 0, peak_gbps = 0;
  double min_time = 0;
  bool resume = false;
  bool list_ops = false;   // --list-ops: the op table's rows instead of benchmarks
  std::string max_memory;  // --max-memory BYTES
};

// Registers every option on `app` (bad numbers fail at parse time, naming the accepted range).
void add_options(CLI::App& app, Options& o);

// The storage dtypes of --dtype, each f32 or bf16 (UsageError naming another).
std::vector<DType> checked_dtypes(const Options& o);

// --max-memory in bytes (0: not given, the device's memory is the limit); UsageError for a bad size.
std::uint64_t max_memory_bytes(const Options& o);

}  // namespace parbench::kernels_bench
