// The fuzz bytes as a program's argument vector: split at NUL bytes, after the program's name (at most 64
// arguments; a longer vector is skipped), and the parse-then-check loop of the command-line fuzz targets.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pbfuzz {

struct Args {
  std::vector<std::string> args;
  std::vector<char*> argv;
  int argc() const { return int(argv.size()); }
};

// False for a vector too long to be worth parsing.
inline bool args_from_bytes(const char* program, const std::uint8_t* data, std::size_t size, Args& out) {
  out.args = {program};
  std::string current;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      out.args.push_back(current), current.clear();
    } else {
      current += char(data[i]);
    }
  }
  if (!current.empty()) out.args.push_back(current);
  if (out.args.size() > 64) return false;
  out.argv.clear();
  for (auto& a : out.args) out.argv.push_back(a.data());
  return true;
}

// `program`'s command line from the fuzz bytes: setup(app, args) registers the options (false: skip this vector),
// the vector is parsed and check(app) (or check()) runs the program's checks. A refusal (CLI11's ParseError, our
// UsageError) is an expected outcome; anything else escapes to the fuzzer, which reports it. In fuzz_args.cpp, the
// one fuzz file that compiles CLI11.
int fuzz_command_line(const char* program, const std::uint8_t* data, std::size_t size,
                      const std::function<bool(CLI::App&, const Args&)>& setup,
                      const std::function<void(const CLI::App&)>& check);
inline int fuzz_command_line(const char* program, const std::uint8_t* data, std::size_t size,
                             const std::function<bool(CLI::App&, const Args&)>& setup,
                             const std::function<void()>& check) {
  return fuzz_command_line(program, data, size, setup, [&](const CLI::App&) { check(); });
}

}  // namespace pbfuzz
