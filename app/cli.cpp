// Common options and the exit-code policy of every program.
#include "app/cli.h"

#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "app/sizes.h"
#include "base/text.h"

namespace parbench {

void add_common_options(CLI::App& app, CommonOptions& o) {
  app.add_option("--device", o.device, "auto, cpu, simt, cuda or cuda:N (auto: cuda when a GPU is usable)")
      ->capture_default_str();
  app.add_option("--csv", o.csv, "write results as CSV to this file");
  app.add_option("--json", o.json, "write results as JSON to this file");
  app.add_option("--trace", o.trace, "write a Chrome/Perfetto trace (JSON) to this file");
  app.add_flag("--quiet,-q", o.quiet, "print no table, only errors");
}

void add_bootstrap_option(CLI::App& app, const std::function<void(const std::string&)>& choose) {
  app.add_option_function<std::string>("--bootstrap", choose,
                                       "how the ranks meet: auto (mpirun's variables: mpi; torchrun's or srun's: "
                                       "tcp; else threads), mpi, tcp (rank 0's TCP store at MASTER_ADDR:MASTER_PORT) "
                                       "or threads (--ranks N in this process)")
      ->check(CLI::IsMember({"auto", "mpi", "tcp", "threads"}))
      ->default_str("auto");
}

namespace {
// The whole message in one insertion (one write of unbuffered stderr), so that the lines of several mpirun
// processes do not interleave mid-line. Through std::cerr, so a program can silence it (the collective benches
// do on mpirun ranks other than 0).
void print_error(const std::string& message) { std::cerr << message << std::flush; }
}  // namespace

int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body) {
  const std::string name = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success&) {  // an option that printed what was asked (--list-impls) and ends the run
    return 0;
  } catch (const CLI::ConversionError& e) {
    // CLI11 says "Could not convert: --x = v": name the value, and where the accepted form is.
    print_error(name + ": error: " + e.what() + ": not a value of the option's type; the accepted values are "
                "in --help\n");
    return 2;
  } catch (const CLI::ParseError& e) {
    print_error(name + ": error: " + e.what() + "\nRun with --help for the accepted options.\n");
    return 2;
  }
  // The docs test checks that a command it cannot run here (one needing a GPU or a cluster) at least parses.
  if (const char* only = std::getenv("PARBENCH_PARSE_ONLY"); only != nullptr && std::string(only) == "1") {
    std::cerr << name << ": options parsed; not run (PARBENCH_PARSE_ONLY=1)\n";
    return 0;
  }
  try {
    return body();
  } catch (const UsageError& e) {
    print_error(name + ": error: " + e.what() + "\n");
    return 2;
  } catch (const std::exception& e) {
    print_error(name + ": failed: " + e.what() + "\n");
    return 1;
  }
}

int run_program(const ProgramText& text, const std::function<void(CLI::App&)>& add_options, int argc, char** argv,
                const std::function<int(const CLI::App&)>& body) {
  CLI::App app{text.description, text.name};
  add_options(app);
  return run_program(app, argc, argv, [&] { return body(app); });
}

std::uint64_t parse_size_option(const std::string& option, const std::string& text) {
  try {
    const std::uint64_t bytes = parse_size(text);
    if (bytes == 0) throw UsageError("0 bytes is not accepted: expected a positive size, e.g. 512M or 16G");
    return bytes;
  } catch (const UsageError& e) {
    throw UsageError(option + ": " + e.what());
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

namespace {

// A validator that parses the whole value as a T (stod or stoll: `parse`), names it `kind` when it is not one, and
// refuses what `ok` rejects; both messages end with the accepted form.
template <typename T>
CLI::Validator parsed_check(T (*parse)(const std::string&, std::size_t*), const char* kind,
                            std::function<bool(T)> ok, const std::string& accepted) {
  return CLI::Validator(
      [parse, kind, ok = std::move(ok), accepted](std::string& value) -> std::string {
        T v{};
        try {
          std::size_t used = 0;
          v = parse(value, &used);
          if (used != value.size()) throw std::invalid_argument("junk");
        } catch (const std::exception&) {
          return "'" + value + "' is not " + kind + "; expected " + accepted;
        }
        return ok(v) ? std::string() : value + " is not accepted: expected " + accepted;
      },
      accepted);
}

double parse_double(const std::string& s, std::size_t* used) { return std::stod(s, used); }
long long parse_integer(const std::string& s, std::size_t* used) { return std::stoll(s, used); }

CLI::Validator number_check(std::function<bool(double)> ok, const std::string& accepted) {
  return parsed_check<double>(parse_double, "a number", std::move(ok), accepted);
}

CLI::Validator integer_check(long long min, long long max, const std::string& accepted) {
  return parsed_check<long long>(parse_integer, "an integer", [min, max](long long v) { return v >= min && v <= max; },
                                 accepted);
}

}  // namespace

CLI::Validator integer_in(long long min, long long max) {
  return integer_check(min, max, "an integer in " + std::to_string(min) + ".." + std::to_string(max));
}

CLI::Validator integer_at_least(long long min) {
  return integer_check(min, std::numeric_limits<long long>::max(), "an integer >= " + std::to_string(min));
}

CLI::Validator greater_than(double bound) {
  return number_check([bound](double v) { return v > bound; }, "a number > " + number_text(bound));
}

CLI::Validator at_least(double min) {
  return number_check([min](double v) { return v >= min; }, "a number >= " + number_text(min));
}

CLI::Validator in_range(double min, double max) {
  return number_check([min, max](double v) { return v >= min && v <= max; },
                      "a number in " + number_text(min) + ".." + number_text(max));
}

}  // namespace parbench
