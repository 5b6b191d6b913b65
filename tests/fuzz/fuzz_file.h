// The fuzz bytes as a file, for the targets whose readers take a path: /tmp/parbench_fuzz_STEM.PID.EXT (one per
// process; scripts/fuzz.sh --ci fixes the pid), rewritten for every input.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace pbfuzz {

inline std::string input_file(const std::string& stem, const std::string& ext, const std::uint8_t* data,
                              std::size_t size) {
  const std::string path = "/tmp/parbench_fuzz_" + stem + "." + std::to_string(::getpid()) + ext;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                std::streamsize(size));
  return path;
}

}  // namespace pbfuzz
