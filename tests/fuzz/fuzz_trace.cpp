// Fuzzes parbench-plot's Chrome-trace reader (timeline): any file gives a timeline or a UsageError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.h"
#include "plots/figures.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/parbench_fuzz_trace." + std::to_string(::getpid()) + ".json";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                std::streamsize(size));
  for (int step : {-1, 0, 3}) {
    try {
      (void)parbench::plots::read_timeline(path, step);
    } catch (const parbench::UsageError&) {
    }
  }
  return 0;
}
