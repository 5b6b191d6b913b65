// Fuzzes bench_kernels' command line: the input, split at NUL bytes into an argument vector, goes through its
// options (CLI11 and our validators), the shapes, linears and dtypes they pick on a host and a GPU device,
// --max-memory and the memory estimate of what they pick, without running anything. A bad vector is a CLI11 ParseError or a
// UsageError.
#include "benchmarks/kernels_bench/memory.h"
#include "benchmarks/kernels_bench/options.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench;
  kernels_bench::Options o;
  return pbfuzz::fuzz_command_line(
      "bench_kernels", data, size,
      [&](CLI::App& app, const pbfuzz::Args&) { return kernels_bench::add_options(app, o), true; },
      [&] {
        const auto dtypes = kernels_bench::checked_dtypes(o);
        (void)kernels_bench::max_memory_bytes(o);
        const auto linears = kernels_bench::parse_linears(o.linears);
        for (const Device dev : {Device{DeviceKind::cpu, 0}, Device{DeviceKind::cuda, 0}}) {
          std::vector<optable::OpShape> dims;
          for (const auto& s : kernels_bench::shapes_to_run(o.filter_shapes, dev.kind == DeviceKind::cuda))
            dims.push_back(s.dims);
          (void)kernels_bench::memory_need(dims, dtypes, dev);
          (void)kernels_bench::memory_need(linears, dtypes, dev);
        }
      });
}
