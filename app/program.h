// A program's main() without CLI11's definitions, which cost each file that includes them seconds of compile
// time: the parser is made, given the program's options and run in app/cli.cpp.
#pragma once
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace parbench {

struct ProgramText {
  std::string description;  // the first line of --help
  std::string name;         // as errors name the program
};

// Makes the program's parser, lets add_options register its options on it, then parses argv and runs body as
// run_program(app, ...) in app/cli.h does, with the same exit codes; body may ask the parser what was given.
int run_program(const ProgramText& text, const std::function<void(CLI::App&)>& add_options, int argc, char** argv,
                const std::function<int(const CLI::App&)>& body);

}  // namespace parbench
