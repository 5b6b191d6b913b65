// Fuzzes the system file reader (bench_train --simulate/--search --system FILE.json): any file gives a system or a
// UsageError naming the file. A system it accepts is written back (system_to_json) and must read again to the same
// JSON: what the reader accepts, the writer can express.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "predict/system.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::predict;
  static const std::string path = "/tmp/parbench_fuzz_system." + std::to_string(::getpid()) + ".json";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                std::streamsize(size));
  SystemModel sys;
  try {
    sys = load_system(path);
  } catch (const parbench::UsageError&) {
    return 0;
  }
  const nlohmann::json written = system_to_json(sys);
  const nlohmann::json again = system_to_json(system_from_json(written, "written back"));
  if (written != again) std::abort();  // the fuzzer reports the input
  return 0;
}
