// Test helpers for plots: a scratch directory, file writing, image checks (PNG decoded with zlib, SVG size),
// running parbench-plot and capturing its exit status and stderr.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "tests/test_files.h"

namespace parbench::plots::test {

using pbtest::ScratchDir;

void write_file(const std::string& path, const std::string& content);

// The message of the UsageError that f() throws; a test failure (and "") when it throws none.
template <class F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);

struct PngInfo {
  int width = 0, height = 0;
  std::size_t distinct_bytes = 0;  // in the inflated image data: a blank image has very few
};
// Checks the signature, every chunk's CRC, IHDR first and IEND last, and that the concatenated IDAT stream
// inflates to exactly the size the header implies. Throws std::runtime_error describing the first problem.
PngInfo check_png(const std::string& path);
// width/height attributes of the <svg> element; throws when the file is not a complete SVG document.
std::pair<int, int> svg_size(const std::string& path);

struct RunResult {
  int exit_code = -1;
  std::string err;
};
// Runs parbench-plot with the arguments (shell-quoted here) and stdout/stderr captured.
RunResult run_plot(const std::vector<std::string>& args);

// True when gnuplot can be run (the render tests skip otherwise).
bool have_gnuplot();

// Realistic inputs.
std::string collectives_csv(unsigned seed);
std::string training_csv(unsigned seed);
std::string pipeline_trace_json(int stages, int microbatches, int steps, bool with_idle_events = false);

}  // namespace parbench::plots::test
