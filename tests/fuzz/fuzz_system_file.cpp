// Fuzzes the system file reader (bench_train --simulate/--search --system FILE.json): any file gives a system or a
// UsageError naming the file. A system it accepts is written back (system_to_json) and must read again to the same
// JSON: what the reader accepts, the writer can express.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "fuzz_file.h"
#include "predict/system.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::predict;
  const std::string path = pbfuzz::input_file("system", ".json", data, size);
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
