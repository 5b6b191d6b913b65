// Fuzzes parbench-plot's command line: the input, split at NUL bytes into an argument vector, goes through the
// figure-name check, the options (CLI11) and the checks that read no file (--size, --max-bytes, the image's
// extension), as main() runs them; no file is read, probed or written. A bad vector is an unknown figure, a CLI11
// ParseError or a UsageError.
#include "fuzz_args.h"
#include "plots/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace parbench::plots;
  PlotCommand c;
  return pbfuzz::fuzz_command_line(
      "parbench-plot", data, size,
      [&](CLI::App& app, const pbfuzz::Args& a) {
        add_plot_options(app, c);
        return unknown_figure(app, a.argc(), a.argv.data()).empty();
      },
      [&] { check_values(c); });
}
