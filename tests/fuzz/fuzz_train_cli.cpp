// Fuzzes bench_train's command line: the input, split at NUL bytes into an argument vector, goes through its
// options (CLI11 and our validators) and the checks that need no ranks, those of a run here (model, scheme
// options, profile range, --max-memory, ...) or of a prediction (--gpus list, model), without running anything.
// A bad vector is a CLI11 ParseError or a UsageError.
#include "benchmarks/train/options.h"
#include "fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench;
  train_bench::Options o;
  return pbfuzz::fuzz_command_line(
      "bench_train", data, size,
      [&](CLI::App& app, const pbfuzz::Args&) { return train_bench::add_options(app, o), true; },
      [&](const CLI::App& app) {
        train_bench::validate_prediction_options(o, app);
        if (o.simulate || o.search) {
          train_bench::prepare_prediction(o);
          (void)train_bench::parse_gpu_list(o.gpus);
        } else {
          train_bench::validate(o, Device{DeviceKind::cpu, 0});
        }
      });
}
