// bench_kernels' --shape (a named shape or explicit dimensions, "B=4,T=1000,C=768,NH=12,V=50257") and --linear
// ("256x64x192").
#include <array>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <string_view>

#include "base/error.h"
#include "base/text.h"
#include "benchmarks/kernels_bench/options.h"

namespace parbench::kernels_bench {

namespace {

constexpr std::string_view kDimsForm = "B=<int>,T=<int>,C=<int>,NH=<int>,V=<int> (each >= 1, NH dividing C)";

[[noreturn]] void bad_dims(const std::string& text, const std::string& why) {
  throw UsageError("--shape '" + text + "': " + why + "; accepted: a named shape or " + std::string(kDimsForm));
}

// The product of dims as a 64-bit count, refused above INT_MAX (the kernels count rows and elements in int).
void check_fits(const std::string& text, std::int64_t n, const char* what) {
  if (n > INT_MAX) bad_dims(text, std::string(what) + " = " + std::to_string(n) + " exceeds " + std::to_string(INT_MAX));
}

}  // namespace

bool is_explicit_shape(const std::string& text) { return text.find('=') != std::string::npos; }

GptShape parse_explicit_shape(const std::string& text) {
  static constexpr std::array<std::string_view, 5> keys{"B", "T", "C", "NH", "V"};
  std::array<int, 5> v{};
  std::array<bool, 5> seen{};
  std::string_view rest = text;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    std::size_t eq = item.find('=');
    std::string key(item.substr(0, eq)), value(eq == std::string_view::npos ? "" : item.substr(eq + 1));
    std::size_t k = 0;
    while (k < keys.size() && keys[k] != key) ++k;
    if (eq == std::string_view::npos || k == keys.size())
      bad_dims(text, "'" + std::string(item) + "' is not KEY=VALUE with KEY one of B, T, C, NH, V");
    if (seen[k]) bad_dims(text, key + " is given twice");
    std::optional<int> n = parse_int_text(value);
    if (!n || *n < 1) bad_dims(text, key + "=" + value + " is not an integer >= 1");
    v[k] = *n;
    seen[k] = true;
    if (comma == std::string_view::npos) break;
  }
  for (std::size_t k = 0; k < keys.size(); ++k)
    if (!seen[k]) bad_dims(text, std::string(keys[k]) + " is missing");
  const auto [B, T, C, NH, V] = v;
  if (C % NH != 0) bad_dims(text, "NH=" + std::to_string(NH) + " does not divide C=" + std::to_string(C));
  check_fits(text, std::int64_t(B) * T * 4 * C, "B*T*4C");
  check_fits(text, std::int64_t(B) * T * V, "B*T*V");
  check_fits(text, std::int64_t(B) * NH * T * T, "B*NH*T*T");
  check_fits(text, 12LL * C * C + 3, "12C^2");
  std::string name = "B" + std::to_string(B) + "_T" + std::to_string(T) + "_C" + std::to_string(C) + "_NH" +
                     std::to_string(NH) + "_V" + std::to_string(V);
  return GptShape{name, true, {B, T, C, NH, V}};
}

std::string LinearShape::name() const {
  return "T" + std::to_string(tokens) + "_I" + std::to_string(in) + "_O" + std::to_string(out);
}

std::vector<LinearShape> parse_linears(const std::vector<std::string>& items) {
  std::vector<LinearShape> out;
  for (const std::string& item : items) {
    auto bad = [&](const std::string& why) {
      throw UsageError("--linear '" + item + "': " + why +
                       "; accepted: TOKENSxINxOUT, integers >= 1 (e.g. 256x64x192), comma-separated");
    };
    std::array<std::int64_t, 3> v{};
    std::size_t at = 0;
    for (int i = 0; i < 3; ++i) {
      const std::size_t end = i < 2 ? item.find('x', at) : item.size();
      if (end == std::string::npos) bad("not three numbers");
      const std::string digits = item.substr(at, end - at);
      if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        bad("'" + digits + "' is not an integer >= 1");
      v[std::size_t(i)] = std::stoll(digits);
      if (v[std::size_t(i)] < 1) bad("'" + digits + "' is not an integer >= 1");
      at = end + 1;
    }
    for (auto [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}})
      if (v[std::size_t(a)] * v[std::size_t(b)] > INT_MAX)
        bad("a matrix of " + std::to_string(v[std::size_t(a)] * v[std::size_t(b)]) + " elements exceeds " +
            std::to_string(INT_MAX));
    out.push_back({int(v[0]), int(v[1]), int(v[2])});
  }
  return out;
}

}  // namespace parbench::kernels_bench
