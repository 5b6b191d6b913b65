// Fuzzes parbench-plot's Chrome-trace reader (timeline): any file gives a timeline or a UsageError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz_file.h"
#include "plots/figures.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = pbfuzz::input_file("trace", ".json", data, size);
  for (int step : {-1, 0, 3}) {
    try {
      (void)parbench::plots::read_timeline(path, step);
    } catch (const parbench::UsageError&) {
    }
  }
  return 0;
}
