// File helpers the tests share: a whole file as a string.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace pbtest {

// The bytes of `path`; empty when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace pbtest
