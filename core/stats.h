// Small statistics over measured series.
#pragma once
#include <algorithm>
#include <vector>

namespace parbench {

// The middle value (the mean of the two middle ones for an even count); 0 for an empty series.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2) return v[mid];
  return 0.5 * (*std::max_element(v.begin(), v.begin() + mid) + v[mid]);
}

}  // namespace parbench
