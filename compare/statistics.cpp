// See statistics.h.
#include "compare/statistics.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/stats.h"

namespace parbench::compare {
namespace {

// The median of `n` values drawn from `v` with replacement.
double resampled_median(const std::vector<double>& v, std::mt19937_64& gen, std::vector<double>& scratch) {
  scratch.resize(v.size());
  for (double& x : scratch) x = v[std::size_t(gen() % v.size())];
  return median(scratch);
}

// The q-quantile of sorted values, interpolating between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * double(sorted.size() - 1);
  const std::size_t i = std::size_t(std::floor(at));
  const double frac = at - double(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - frac) + sorted[i + 1] * frac : sorted[i];
}

}  // namespace

Ratio time_ratio(const std::vector<double>& old_us, const std::vector<double>& new_us, double confidence,
                 int resamples) {
  Ratio r;
  const double old_median = median(old_us);
  r.value = old_median > 0 ? median(new_us) / old_median : 0;
  if (old_us.size() < 2 || new_us.size() < 2 || old_median <= 0) return r;
  std::mt19937_64 gen(0x5eed);  // fixed: the same inputs give the same interval
  std::vector<double> ratios, scratch;
  ratios.reserve(std::size_t(resamples));
  for (int i = 0; i < resamples; ++i) {
    const double o = resampled_median(old_us, gen, scratch);
    const double n = resampled_median(new_us, gen, scratch);
    if (o > 0) ratios.push_back(n / o);
  }
  std::sort(ratios.begin(), ratios.end());
  if (ratios.empty()) return r;
  r.lo = quantile(ratios, (1 - confidence) / 2);
  r.hi = quantile(ratios, 1 - (1 - confidence) / 2);
  return r;
}

}  // namespace parbench::compare
