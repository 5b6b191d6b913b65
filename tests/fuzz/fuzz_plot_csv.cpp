// Fuzzes parbench-plot's CSV reader and the figure data built from it: any file is read into a table or refused
// with a UsageError (naming file, line and column); the collective panels and training series of what was read
// are computed without crashing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "fuzz_file.h"
#include "plots/csv_table.h"
#include "plots/figures.h"

using namespace parbench::plots;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = pbfuzz::input_file("plot", ".csv", data, size);
  try {
    const CsvTable t = CsvTable::read(path, collective_columns("busbw_gbps"));
    std::string common;
    std::size_t dropped = 0;
    (void)collective_panels(t, {}, "busbw_gbps", UINT64_MAX, &common, &dropped);
  } catch (const parbench::UsageError&) {
  }
  try {
    const CsvTable t = CsvTable::read(path, bubble_columns());
    std::string common;
    (void)bubble_series(t, {}, &common);
  } catch (const parbench::UsageError&) {
  }
  return 0;
}
