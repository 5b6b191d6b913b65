// Size and size-list parsing.
#include "app/sizes.h"

#include <charconv>
#include <limits>

#include "base/error.h"

namespace parbench {

namespace {

[[noreturn]] void bad(std::string_view spec, std::string_view token, std::string_view why) {
  std::string msg = "bad size list '" + std::string(spec) + "'";
  if (token != spec) msg += " at '" + std::string(token) + "'";
  throw UsageError(msg + ": " + std::string(why) + "; " + std::string(kSizeListForms));
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

std::uint64_t parse_size(std::string_view token) {
  const std::string accepted =
      "expected a non-negative integer with an optional K, M or G suffix (binary), e.g. 8, 64K, 1G";
  std::string_view digits = token;
  if (!digits.empty() && (digits.back() == 'B' || digits.back() == 'b')) digits.remove_suffix(1);
  unsigned shift = 0;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: break;
    }
    if (shift) digits.remove_suffix(1);
  }
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size())
    throw UsageError("bad size '" + std::string(token) + "': " + accepted);
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift))
    throw UsageError("size '" + std::string(token) + "' is too large");
  return value << shift;
}

std::vector<std::uint64_t> parse_size_list(std::string_view spec) {
  if (spec.empty()) bad(spec, spec, "it is empty");
  auto size_in = [&](std::string_view token) {
    try {
      return parse_size(token);
    } catch (const UsageError&) {
      bad(spec, token, "not a size");
    }
  };
  std::vector<std::uint64_t> out;
  if (spec.find(':') == std::string_view::npos) {
    for (auto token : split(spec, ',')) {
      if (token.empty()) bad(spec, spec, "empty entry in list");
      out.push_back(size_in(token));
    }
    return out;
  }
  auto parts = split(spec, ':');
  if (parts.size() != 3) bad(spec, spec, "a range needs exactly three fields MIN:MAX:STEP");
  std::uint64_t lo = size_in(parts[0]), hi = size_in(parts[1]);
  if (lo > hi) bad(spec, spec, "MIN " + std::string(parts[0]) + " is larger than MAX " + std::string(parts[1]));
  std::string_view step = parts[2];
  if (step.size() < 2 || (step[0] != 'x' && step[0] != '+'))
    bad(spec, step, "the step must be xFACTOR or +STEP");
  std::uint64_t amount = size_in(step.substr(1));
  if (step[0] == 'x') {
    if (amount < 2) bad(spec, step, "the factor must be an integer >= 2");
    if (lo == 0) bad(spec, parts[0], "a multiplicative sweep cannot start at 0");
    for (std::uint64_t s = lo; s <= hi; s *= amount) {
      out.push_back(s);
      if (s > hi / amount) break;
    }
  } else {
    if (amount == 0) bad(spec, step, "the step must be > 0");
    if ((hi - lo) / amount >= kMaxSweepSizes)
      bad(spec, step, "it gives " + std::to_string((hi - lo) / amount + 1) + " sizes, more than " +
                          std::to_string(kMaxSweepSizes) + "; use a larger step");
    for (std::uint64_t s = lo; s <= hi; s += amount) {
      out.push_back(s);
      if (hi - s < amount) break;
    }
  }
  return out;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr const char* suffix[] = {"", "K", "M", "G"};
  int i = 0;
  while (i < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + suffix[i];
}

}  // namespace parbench
