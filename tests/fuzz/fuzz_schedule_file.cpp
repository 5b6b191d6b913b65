// Fuzzes the pipeline schedule file reader (bench_train --schedule FILE.csv): any file gives a schedule the
// checker accepted, or a UsageError naming the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz_file.h"
#include "parallel/schedule/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = pbfuzz::input_file("sched", ".csv", data, size);
  try {
    (void)parbench::read_schedule_csv(path);
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
