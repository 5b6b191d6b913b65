// Fuzzes parbench-plot's command line: the input, split at NUL bytes into an argument vector, goes through the
// figure-name check, the options (CLI11) and the checks that read no file (--size, --max-bytes, the image's
// extension), as main() runs them; no file is read, probed or written. A bad vector is an unknown figure, a CLI11
// ParseError or a UsageError.
#include <CLI/CLI.hpp>

#include "core/error.h"
#include "fuzz_args.h"
#include "plots/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench;
  pbfuzz::Args a;
  if (!pbfuzz::args_from_bytes("parbench-plot", data, size, a)) return 0;
  CLI::App app{"fuzz", "parbench-plot"};
  plots::PlotCommand c;
  plots::add_plot_options(app, c);
  if (!plots::unknown_figure(app, a.argc(), a.argv.data()).empty()) return 0;
  try {
    app.parse(a.argc(), a.argv.data());
    plots::check_values(c);
  } catch (const CLI::ParseError&) {
  } catch (const UsageError&) {
  }
  return 0;
}
