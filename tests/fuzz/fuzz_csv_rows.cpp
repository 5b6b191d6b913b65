// Fuzzes the CSV reading behind --resume and bench_train's append: split_csv_line on any line, and CsvRowFile
// opening any file in append mode (it reads the header and the rows; a mismatch is a UsageError, nothing else).
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "app/output.h"
#include "base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto fields = parbench::split_csv_line(text);
  if (fields.empty()) __builtin_trap();  // even "" is one (empty) field
  // A fixed name in the working folder (scripts/fuzz.sh runs in build-fuzz/), not one with the pid: the path goes
  // into messages and comparisons, and a length or bytes that change from run to run would change what the fuzzer
  // explores (scripts/fuzz.sh --ci must repeat itself). Processes fuzzing at once in one folder share the file: each
  // then reads some input, which is no false finding.
  static const std::string path = "fuzz_csv_rows.scratch.csv";
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(text.data(), std::streamsize(text.size()));
  try {
    parbench::CsvRowFile f("--csv", path, "a,b,c", parbench::CsvRowFile::Mode::append);
    for (const auto& row : f.existing_rows()) (void)row.size();
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
