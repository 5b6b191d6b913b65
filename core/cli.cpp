// Common options and the exit-code policy of every program.
#include "core/cli.h"

#include <iostream>

#include "core/error.h"
#include "core/sizes.h"

namespace parbench {

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--device", o.device, "auto, cpu, simt, cuda or cuda:N (auto: cuda when a GPU is usable)")
      ->capture_default_str();
  app.add_option("--csv", o.csv, "write results as CSV to this file");
  app.add_option("--json", o.json, "write results as JSON to this file");
  app.add_option("--trace", o.trace, "write a Chrome/Perfetto trace (JSON) to this file");
  app.add_flag("--quiet,-q", o.quiet, "print no table, only errors");
}

int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << "\nRun with --help for the accepted options.\n";
    return 2;
  }
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << app.get_name() << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << app.get_name() << ": failed: " << e.what() << "\n";
    return 1;
  }
}

CLI::Validator size_list_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          parse_size_list(value);
          return {};
        } catch (const UsageError& e) {
          return e.what();
        }
      },
      "SIZES", "size list");
}

}  // namespace parbench
