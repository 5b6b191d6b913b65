// See compare.h.
#include "compare/compare.h"

#include <cstdio>

#include "core/stats.h"

namespace parbench::compare {

const char* mark_name(Mark m) {
  switch (m) {
    case Mark::slower: return "slower";
    case Mark::faster: return "faster";
    case Mark::unknown: return "?";
    default: return "";
  }
}

Mark judge(const Ratio& r, double threshold) {
  if (!r.lo || !r.hi) return Mark::unknown;
  if (*r.lo > 1 + threshold) return Mark::slower;
  if (*r.hi < 1 / (1 + threshold)) return Mark::faster;
  return Mark::none;
}

namespace {

// The same measurement, an empty collective or implementation (the file did not say) matching any.
bool same(const RowKey& a, const RowKey& b) {
  return a.bytes == b.bytes && a.dtype == b.dtype && a.op == b.op && a.root == b.root && a.inplace == b.inplace &&
         (a.collective == b.collective || a.collective.empty() || b.collective.empty()) &&
         (a.impl == b.impl || a.impl.empty() || b.impl.empty());
}

}  // namespace

Comparison compare_runs(const Run& old_run, const Run& new_run, const Settings& s) {
  Comparison c;
  std::map<RowKey, bool> new_matched;
  for (const auto& [key, samples] : new_run.rows) new_matched[key] = false;
  for (const auto& [key, old_samples] : old_run.rows) {
    std::vector<std::map<RowKey, RowSamples>::const_iterator> found;
    for (auto it = new_run.rows.begin(); it != new_run.rows.end(); ++it)
      if (same(key, it->first)) found.push_back(it);
    if (found.empty()) {
      c.only_old.push_back(key);
      continue;
    }
    if (found.size() > 1) {
      c.ambiguous.push_back(key);
      continue;
    }
    new_matched[found[0]->first] = true;
    RowComparison row{key, &old_samples, &found[0]->second, {}, 0, Mark::none};
    if (row.key.impl.empty()) row.key.impl = found[0]->first.impl;
    if (row.key.collective.empty()) row.key.collective = found[0]->first.collective;
    row.ratio = time_ratio(old_samples.time_us, found[0]->second.time_us, s.confidence, s.resamples);
    row.busbw_ratio = old_samples.busbw() > 0 ? found[0]->second.busbw() / old_samples.busbw() : 0;
    row.mark = judge(row.ratio, s.threshold);
    c.rows.push_back(row);
  }
  for (const auto& [key, matched] : new_matched)
    if (!matched) c.only_new.push_back(key);
  return c;
}

std::string comparison_text(const Run& old_run, const Run& new_run, const Comparison& c, const Settings& s) {
  std::string out;
  char line[512];
  auto add = [&](const char* text) { out += text; };
  std::snprintf(line, sizeof line,
                "# parbench-compare: %s (%s, %zu rows) against %s (%s, %zu rows)\n"
                "# ratio: median time new / old; marked where the whole %.0f%% interval (bootstrap of the medians, %d "
                "resamples) lies beyond %.3g%%\n#\n",
                old_run.path.c_str(), old_run.format.c_str(), old_run.rows.size(), new_run.path.c_str(),
                new_run.format.c_str(), new_run.rows.size(), s.confidence * 100, s.resamples, s.threshold * 100);
  add(line);
  std::snprintf(line, sizeof line, "# %-13s %-9s %12s %5s %5s %4s %5s %6s %6s %11s %11s %7s %17s %7s  %s\n",
                "collective", "impl", "size", "type", "op", "root", "half", "n_old", "n_new", "old_us", "new_us",
                "ratio", "interval", "busbw", "mark");
  add(line);
  int counts[4] = {0, 0, 0, 0};
  for (const RowComparison& r : c.rows) {
    ++counts[int(r.mark)];
    char interval[40] = "-";
    if (r.ratio.lo) std::snprintf(interval, sizeof interval, "[%.3f, %.3f]", *r.ratio.lo, *r.ratio.hi);
    std::snprintf(line, sizeof line, "  %-13s %-9s %12llu %5s %5s %4d %5s %6zu %6zu %11.3f %11.3f %7.3f %17s %7.3f  %s\n",
                  r.key.collective.c_str(), r.key.impl.empty() ? "-" : r.key.impl.c_str(),
                  (unsigned long long)r.key.bytes, r.key.dtype.c_str(), r.key.op.c_str(), r.key.root,
                  r.key.inplace ? "in" : "out", r.old_row->time_us.size(), r.new_row->time_us.size(),
                  median(r.old_row->time_us), median(r.new_row->time_us), r.ratio.value, interval, r.busbw_ratio,
                  mark_name(r.mark));
    add(line);
  }
  std::snprintf(line, sizeof line,
                "#\n# %d slower, %d faster, %d within the noise or the threshold, %d with too few samples to judge "
                "(one time per row: run with -I 1, or -N for repeated rows); %zu only in the old run, %zu only in "
                "the new, %zu ambiguous\n",
                counts[int(Mark::slower)], counts[int(Mark::faster)], counts[int(Mark::none)],
                counts[int(Mark::unknown)], c.only_old.size(), c.only_new.size(), c.ambiguous.size());
  add(line);
  for (const RowKey& k : c.ambiguous) out += "# ambiguous: " + k.text() + " (name the implementation in both runs)\n";
  return out;
}

}  // namespace parbench::compare
