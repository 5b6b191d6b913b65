// A byte pattern of the position and a seed, for checking copies and messages byte for byte: data that was skipped,
// shifted, cut short or came from another source (another seed) differs from it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace parbench {

inline unsigned char pattern_byte(std::uint64_t seed, std::size_t index) {
  return static_cast<unsigned char>((std::uint64_t(index) * 2654435761u + seed * 0x9E3779B1u) >> 13);
}
inline void fill_pattern(std::span<unsigned char> bytes, std::uint64_t seed) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern_byte(seed, i);
}
// The bytes of `bytes` that differ from the pattern of `seed`.
inline std::int64_t pattern_mismatches(std::span<const unsigned char> bytes, std::uint64_t seed) {
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) wrong += bytes[i] != pattern_byte(seed, i);
  return wrong;
}

}  // namespace parbench
