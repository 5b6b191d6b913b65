// Byte sizes on the command line: "64M", and size lists for sweeps ("8:1G:x2", "1K:64M:+1M", "1K,4K,1M").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parbench {

// A non-negative integer with an optional binary suffix K, M or G (KiB, MiB, GiB; lower case too, an optional
// trailing B). Throws UsageError naming the token and the accepted form.
std::uint64_t parse_size(std::string_view token);

// The most sizes a sweep may have: a range like 1K:1G:+1 would otherwise build a list of a billion sizes.
inline constexpr std::uint64_t kMaxSweepSizes = 100000;

// min:max:xF (multiply by F >= 2), min:max:+S (add S > 0), or a comma list. Bounds inclusive; min <= max.
std::vector<std::uint64_t> parse_size_list(std::string_view spec);

// 1024 -> "1K", 1536 -> "1536", 64 MiB -> "64M": the shortest exact binary form.
std::string format_size(std::uint64_t bytes);

inline constexpr std::string_view kSizeListForms =
    "accepted forms: MIN:MAX:xFACTOR (e.g. 8:1G:x2), MIN:MAX:+STEP (e.g. 1K:64M:+1M), or a list (e.g. 1K,4K,1M); "
    "sizes are integers with an optional K, M or G suffix (binary)";

}  // namespace parbench
