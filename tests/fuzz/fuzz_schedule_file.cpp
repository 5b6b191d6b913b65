// Fuzzes the pipeline schedule file reader (bench_train --schedule FILE.csv): any file gives a schedule the
// checker accepted, or a UsageError naming the file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "core/error.h"
#include "parallel/schedule/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/parbench_fuzz_sched." + std::to_string(::getpid()) + ".csv";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                std::streamsize(size));
  try {
    (void)parbench::read_schedule_csv(path);
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
