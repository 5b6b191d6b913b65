// The ratio of two runs' times with its confidence interval: the ratio of the medians of the samples, and the
// interval from a bootstrap (both sides resampled with replacement, a fixed seed so that the same files give the same
// answer, the percentile interval of the resampled ratios).
#pragma once
#include <optional>
#include <vector>

namespace parbench::compare {

struct Ratio {
  double value = 0;                // median(new) / median(old)
  std::optional<double> lo, hi;    // none where either side has fewer than two samples
};

// `confidence` in (0, 1), e.g. 0.95; `resamples` >= 100.
Ratio time_ratio(const std::vector<double>& old_us, const std::vector<double>& new_us, double confidence,
                 int resamples);

}  // namespace parbench::compare
