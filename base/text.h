// Joining names into one line of text, as error messages and help texts list what is accepted; whole numbers read
// from option values.
#pragma once
#include <cctype>
#include <charconv>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace parbench {

// "a, b, c": each item of `items` as `text` renders it (the item itself by default), separated by `sep`.
template <class Range, class Text = std::identity>
std::string join(Range&& items, std::string_view sep = ", ", Text text = {}) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += sep;
    first = false;
    out += std::invoke(text, item);
  }
  return out;
}

// `s` with ASCII letters in lower case (the C locale's tolower, byte by byte).
inline std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A number as text with up to `digits` significant digits, without trailing zeros (1048576, not 1.04858e+06, at the
// default 16).
inline std::string number_text(double v, int digits = 16) {
  std::ostringstream s;
  s.precision(digits);
  s << v;
  return s.str();
}

// The whole of `text` as a decimal int ("-3", "42"; not "", "+4", " 4", "4x" or out of range).
inline std::optional<int> parse_int_text(std::string_view text) {
  int v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

}  // namespace parbench
