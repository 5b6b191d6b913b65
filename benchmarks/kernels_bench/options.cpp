#include "benchmarks/kernels_bench/options.h"
#include "app/cli.h"

#include "base/error.h"
#include "base/text.h"

namespace parbench::kernels_bench {

std::vector<GptShape> shapes_to_run(const std::string& name, bool cuda) {
  if (is_explicit_shape(name)) return {parse_explicit_shape(name)};
  std::vector<GptShape> out;
  for (const auto& s : gpt_shapes())
    if (name.empty() ? s.host_default != cuda : s.name == name) out.push_back(s);
  if (out.empty())
    throw UsageError("--shape: unknown shape '" + name + "'; accepted: " + join(gpt_shapes(), ", ", &GptShape::name) +
                     ", or dimensions B=<int>,T=<int>,C=<int>,NH=<int>,V=<int>");
  return out;
}

void add_options(CLI::App& app, Options& o) {
  add_common_options(app, o.common);
  app.add_option("--dtype", o.dtypes, "storage dtypes to run: f32, bf16")->delimiter(',');
  app.add_option("--shape", o.filter_shapes,
                 "run only this shape: tiny, small, gpt2-124M or gpt2-1.5B, or dimensions B=4,T=1000,C=768,NH=12,"
                 "V=50257 (any values >= 1, NH dividing C), on any device (default: tiny and small on cpu and simt, "
                 "the gpt2 ones on cuda)");
  app.add_option("--peak-tflops", o.peak_tflops, "peak TFLOP/s for the roofline (default: device table)")
      ->check(greater_than(0));
  app.add_option("--peak-gbps", o.peak_gbps, "peak memory GB/s for the roofline (default: device table)")
      ->check(greater_than(0));
  app.add_option("--min-time", o.min_time, "seconds per benchmark (default 0.05 on host devices, 0.5 on cuda)")
      ->check(greater_than(0));
  app.add_option("--linear", o.linears,
                 "instead of the op table, time these linear layers' forward, input-gradient and weight-gradient "
                 "GEMMs: TOKENSxINxOUT, comma-separated (e.g. 256x64x192)")
      ->delimiter(',');
  app.add_flag("--resume", o.resume, "skip the benchmarks already in --csv (by name), append the rest");
  app.add_flag("--list-ops", o.list_ops,
               "print the op table's rows as CSV (name, kind, backward, forward_of, cost, k, per_block), then "
               "--linear's (kind linear, the part in cost), and exit: scripts/calibrate.sh reads the op names from it");
  app.add_option("--max-memory", o.max_memory,
                 "refuse, before allocating, shapes whose largest workload exceeds BYTES (K/M/G; default: the "
                 "device's memory)");
}

std::vector<DType> checked_dtypes(const Options& o) {
  std::vector<DType> out;
  for (const auto& name : o.dtypes) {
    DType dt = parse_dtype(name);
    if (dt != DType::f32 && dt != DType::bf16) throw UsageError("--dtype " + name + " is not f32 or bf16");
    out.push_back(dt);
  }
  return out;
}

std::uint64_t max_memory_bytes(const Options& o) {
  return o.max_memory.empty() ? 0 : parse_size_option("--max-memory", o.max_memory);
}

}  // namespace parbench::kernels_bench
