// Grouping rows into series by key fields, with labels that mention only what varies ("ring (8 ranks)") and
// a title suffix with what is common ("allreduce, f32, cpu").
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace parbench::plots {

struct KeyField {
  std::string column;
  std::function<std::string(const std::string&)> format;  // value -> words; empty result = leave out
  bool main = false;      // the series name: always in the label, outside the parentheses
  bool in_title = true;   // when common to all rows, mentioned in the figure title
};

using Key = std::vector<std::string>;  // raw cell values, one per KeyField

// Which fields take more than one value among `keys`.
std::vector<bool> varying_fields(const std::vector<Key>& keys);
// Main fields, then "(a, b)" with the other varying fields.
std::string key_label(const Key& key, const std::vector<KeyField>& fields, const std::vector<bool>& varies);
// The non-varying, non-empty fields of keys[0], formatted and joined with ", ".
std::string common_values(const std::vector<Key>& keys, const std::vector<KeyField>& fields,
                          const std::vector<bool>& varies);
// Element-wise, numbers compared as numbers, text as text.
bool key_less(const Key& a, const Key& b);

// Formatters.
std::string as_is(const std::string& v);
std::function<std::string(const std::string&)> with_pattern(std::string before, std::string after);

// Filter helpers: true when `wanted` is empty or contains the value.
bool wanted(const std::vector<std::string>& wanted, const std::string& value);

}  // namespace parbench::plots
