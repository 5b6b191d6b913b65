// Fuzzes the CSVs bench_train --calibrate reads: a file is taken as a bench_kernels or an sdpa_compare.py CSV when
// its header says so, else as a bench_<collective> CSV, as the program does; either gives rows that the fits take
// (or refuse with a UsageError), or a UsageError naming the file. A kernel fit with the rows' measured linears, or
// the measured attention, must make a system that its schema accepts, as --system-out writes it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "fuzz_file.h"
#include "predict/calibrate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::predict;
  const std::string path = pbfuzz::input_file("calibrate", ".csv", data, size);
  try {
    if (is_kernels_csv(path)) {
      const auto rows = read_kernels_csv(path);
      for (const char* dtype : {"f32", "bf16"}) {
        const SystemModel sys = builtin_system("dgx-h100");
        KernelFit fit;
        try {
          fit = fit_kernel_curves(rows, sys, dtype);
        } catch (const parbench::UsageError&) {
          continue;
        }
        std::vector<MeasuredLinear> linears;
        try {
          linears = measured_linears(rows, dtype);
        } catch (const parbench::UsageError&) {
        }
        try {
          (void)system_from_json(system_to_json(with_measured_linears(with_kernel_fit(sys, fit), linears)), "fitted");
        } catch (const parbench::UsageError& e) {
          std::fprintf(stderr, "a fitted system fails its schema: %s\n", e.what());
          std::abort();
        }
      }
    } else if (is_sdpa_csv(path)) {
      const SystemModel sys = with_measured_attention(builtin_system("dgx-h100"), read_sdpa_csv(path));
      try {
        (void)system_from_json(system_to_json(sys), "measured");
      } catch (const parbench::UsageError& e) {
        std::fprintf(stderr, "a system with measured attention fails its schema: %s\n", e.what());
        std::abort();
      }
    } else {
      (void)fit_links(read_collective_csv(path));
    }
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
