// Command-line conventions shared by every program (on CLI11): common options and exit codes.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "app/common_options.h"
#include "app/program.h"

namespace parbench {

// --device, --csv, --json, --trace, --quiet.
void add_common_options(CLI::App& app, CommonOptions& options);

// --bootstrap auto|mpi|tcp|threads for the programs that start ranks: `choose` gets the value once parsed (the
// program passes select_bootstrap of collectives/bootstrap.h; app does not link the collectives).
void add_bootstrap_option(CLI::App& app, const std::function<void(const std::string&)>& choose);

// Parses the command line and runs `body`. Exit codes: what body returns; 0 for --help; 2 for usage errors
// (CLI11 parse errors, UsageError) with "error: ..." on stderr; 1 for runtime failures (Error and any other
// exception). Never lets an exception escape.
int run_program(CLI::App& app, int argc, char** argv, const std::function<int()>& body);

// A CLI11 validator for size lists, so bad --sizes fail at parse time with the accepted forms.
CLI::Validator size_list_validator();

// Number validators whose messages name the value and the accepted range, e.g. "--timeout: 0 is not accepted:
// expected a number > 0" (CLI11's own print the largest double as the upper bound).
CLI::Validator greater_than(double bound);        // value > bound
CLI::Validator in_range(double min, double max);  // min <= value <= max
CLI::Validator at_least(double min);              // value >= min
// The same for integer options: "1.5" or "abc" is refused naming the value and the accepted range (CLI11's
// own conversion error does not say what is accepted).
CLI::Validator integer_in(long long min, long long max);
CLI::Validator integer_at_least(long long min);

}  // namespace parbench
