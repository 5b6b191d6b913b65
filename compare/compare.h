// Two runs row by row: matched by what they measured, each matched row's time ratio with its interval, and a mark
// where the change lies outside the noise and beyond the threshold.
#pragma once
#include <string>
#include <vector>

#include "compare/runs.h"
#include "compare/statistics.h"

namespace parbench::compare {

struct Settings {
  double threshold = 0.10;   // a change smaller than this fraction is never marked (see main.cpp)
  double confidence = 0.95;  // of the interval
  int resamples = 2000;
};

enum class Mark { none, slower, faster, unknown };  // unknown: too few samples on a side to judge
const char* mark_name(Mark m);                        // "", "slower", "faster", "?"

struct RowComparison {
  RowKey key;  // the old run's (its impl filled from the new one's where the old did not say)
  const RowSamples* old_row = nullptr;
  const RowSamples* new_row = nullptr;
  Ratio ratio;
  double busbw_ratio = 0;  // new / old
  Mark mark = Mark::none;
};

struct Comparison {
  std::vector<RowComparison> rows;
  std::vector<RowKey> only_old, only_new, ambiguous;  // ambiguous: an old row several new rows could be
};

// A row with an interval is slower when the whole interval lies above 1 + threshold, faster when it lies below
// 1 / (1 + threshold).
Mark judge(const Ratio& r, double threshold);

Comparison compare_runs(const Run& old_run, const Run& new_run, const Settings& s);

// The table parbench-compare prints, with its header and summary lines.
std::string comparison_text(const Run& old_run, const Run& new_run, const Comparison& c, const Settings& s);

}  // namespace parbench::compare
