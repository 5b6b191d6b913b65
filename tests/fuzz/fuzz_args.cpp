// The parse-then-check loop of the command-line fuzz targets (fuzz_args.h), compiled once for all of them.
#include "fuzz_args.h"

#include <CLI/CLI.hpp>

#include "base/error.h"

namespace pbfuzz {

int fuzz_command_line(const char* program, const std::uint8_t* data, std::size_t size,
                      const std::function<bool(CLI::App&, const Args&)>& setup,
                      const std::function<void(const CLI::App&)>& check) {
  Args a;
  if (!args_from_bytes(program, data, size, a)) return 0;
  CLI::App app{"fuzz", program};
  if (!setup(app, a)) return 0;
  try {
    app.parse(a.argc(), a.argv.data());
    check(app);
  } catch (const CLI::ParseError&) {
  } catch (const parbench::UsageError&) {
  }
  return 0;
}

}  // namespace pbfuzz
