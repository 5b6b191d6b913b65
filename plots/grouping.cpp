// Series keys and their labels, shared by every figure that groups CSV rows.
#include "plots/grouping.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace parbench::plots {
namespace {

bool parse_number(const std::string& s, double* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::vector<bool> varying_fields(const std::vector<Key>& keys) {
  std::vector<bool> varies(keys.empty() ? 0 : keys[0].size(), false);
  for (std::size_t f = 0; f < varies.size(); ++f) {
    std::set<std::string> values;
    for (const Key& k : keys) values.insert(k[f]);
    varies[f] = values.size() > 1;
  }
  return varies;
}

std::string key_label(const Key& key, const std::vector<KeyField>& fields, const std::vector<bool>& varies) {
  std::string main, rest;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const std::string words = key[f].empty() ? "" : fields[f].format(key[f]);
    if (words.empty()) continue;
    if (fields[f].main) {
      main += (main.empty() ? "" : " ") + words;
    } else if (varies[f]) {
      rest += (rest.empty() ? "" : ", ") + words;
    }
  }
  if (main.empty()) return rest;
  return rest.empty() ? main : main + " (" + rest + ")";
}

std::string common_values(const std::vector<Key>& keys, const std::vector<KeyField>& fields,
                          const std::vector<bool>& varies) {
  std::string out;
  if (keys.empty()) return out;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    if (varies[f] || keys[0][f].empty() || !fields[f].in_title) continue;
    const std::string words = fields[f].format(keys[0][f]);
    if (!words.empty()) out += (out.empty() ? "" : ", ") + words;
  }
  return out;
}

bool key_less(const Key& a, const Key& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    double x = 0, y = 0;
    if (parse_number(a[i], &x) && parse_number(b[i], &y)) {
      if (x != y) return x < y;
    } else if (a[i] != b[i]) {
      return a[i] < b[i];
    }
  }
  return a.size() < b.size();
}

std::string as_is(const std::string& v) { return v; }

std::function<std::string(const std::string&)> with_pattern(std::string before, std::string after) {
  return [before, after](const std::string& v) { return before + v + after; };
}

bool wanted(const std::vector<std::string>& list, const std::string& value) {
  return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace parbench::plots
