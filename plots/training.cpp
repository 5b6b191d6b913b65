// scaling and bubble: figures from a training CSV (bench_train), one series per scheme (and whatever else varies
// between rows). The scaling figure's lower rows are in plots/scaling_panels.cpp, the memory figure in
// plots/memory_figure.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "core/csv_columns.h"
#include "plots/figures.h"
#include "plots/grouping.h"
#include "plots/scaling_panels.h"
#include "plots/training_common.h"

namespace parbench::plots {
namespace train_csv = csv::train;
namespace {

std::vector<Key> sorted_distinct(std::vector<Key> keys) {
  std::sort(keys.begin(), keys.end(), key_less);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

// The series of each share of split_colors, in their order.
template <class S>
std::vector<std::vector<S>> split_series(const std::vector<S>& series) {
  std::vector<int> colors;
  for (const S& s : series) colors.push_back(s.color);
  std::vector<std::vector<S>> out;
  for (const std::vector<int>& part : split_colors(colors)) {
    out.emplace_back();
    for (const S& s : series)
      if (std::binary_search(part.begin(), part.end(), s.color)) out.back().push_back(s);
  }
  return out;
}

// Integer tics at the values present (ranks, microbatches), on a log2 axis when they span more than 16x.
void integer_axis(PlotScript& sc, const std::string& axis, const std::set<double>& values) {
  const double lo = *values.begin(), hi = *values.rbegin();
  std::string tics = "set " + axis + "tics (";
  bool first = true;
  for (double v : values) {
    tics += (first ? "" : ", ") + gnuplot_number(v);
    first = false;
  }
  sc.cmd(tics + ")");
  if (hi / lo > 16) {
    sc.cmd("set logscale " + axis + " 2");
    sc.cmd("set " + axis + "range [" + gnuplot_number(lo / 1.25) + ":" + gnuplot_number(hi * 1.25) + "]");
  } else {
    const double pad = std::max(0.5, (hi - lo) * 0.05);
    sc.cmd("set " + axis + "range [" + gnuplot_number(lo - pad) + ":" + gnuplot_number(hi + pad) + "]");
  }
}

}  // namespace

// ---- scaling -------------------------------------------------------------------------------------

// bench_train --simulate rows (predicted = 1) form series of their own, labelled "predicted".
std::string predicted_words(const std::string& v) { return v == "1" ? "predicted" : ""; }

namespace {

// A row's overlap fraction; nullopt when the table lacks the column or the cell is empty (predicted rows).
std::optional<double> row_overlap(const CsvTable& t, std::size_t r) {
  if (!t.has_column(train_csv::overlap)) return std::nullopt;
  const std::optional<double> v = t.optional_number(r, train_csv::overlap);
  if (v && (*v < 0 || *v > 1))
    throw UsageError(t.path() + ":" + std::to_string(t.line(r)) + ": column 'overlap': '" +
                     t.text(r, train_csv::overlap) + "' is outside 0..1 (the fraction of communication time)");
  return v;
}

}  // namespace

std::vector<ScalingSeries> scaling_series(const CsvTable& t, const TrainingFilter& filter, const std::string& metric,
                                          ScalingMode mode, std::string* common,
                                          std::vector<std::string>* single, std::vector<std::string>* devices) {
  const std::vector<KeyField> fields = {{train_csv::scheme, as_is, true},
                                        {train_csv::schedule, as_is},
                                        {train_csv::model, as_is},
                                        {train_csv::device, as_is, false, false},  // the caption names it
                                        {train_csv::impl, as_is},
                                        {train_csv::predicted, predicted_words}};
  struct Acc {
    double sum = 0, overlap = 0;
    int rows = 0, overlaps = 0;
  };
  std::map<Key, std::map<double, Acc>, decltype(&key_less)> grouped(&key_less);
  std::vector<Key> keys;
  for (std::size_t r = 0; r < t.size(); ++r) {
    if (!keep_row(t, r, filter)) continue;
    const double ranks = static_cast<double>(t.integer(r, train_csv::ranks));
    if (ranks < 1) throw UsageError(t.path() + ":" + std::to_string(t.line(r)) + ": column 'ranks': must be >= 1");
    const std::optional<double> value = t.optional_number(r, metric);
    if (!value) continue;  // a run that reported no throughput
    Key key = row_key(t, r, fields);
    Acc& cell = grouped[key][ranks];
    cell.sum += mode == ScalingMode::weak ? *value / ranks : *value;
    cell.rows += 1;
    if (const std::optional<double> overlap = row_overlap(t, r)) cell.overlap += *overlap, cell.overlaps += 1;
    keys.push_back(std::move(key));
  }
  if (keys.empty()) no_rows(t, "(no row with a " + metric + " value passes the filters)");
  const std::vector<bool> varies = varying_fields(keys);
  if (common) *common = common_values(keys, fields, varies);
  if (devices) *devices = field_values(keys, 3);
  const std::vector<Key> distinct = sorted_distinct(keys);
  std::vector<ScalingSeries> out;
  for (auto& [key, by_ranks] : grouped) {
    ScalingSeries s;
    s.label = key_label(key, fields, varies);
    if (by_ranks.size() < 2) {
      if (single) single->push_back(s.label);
      continue;
    }
    s.color = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), key, key_less) - distinct.begin());
    for (auto& [ranks, cell] : by_ranks) {
      s.ranks.push_back(ranks);
      s.throughput.push_back(cell.sum / cell.rows);
      s.overlap.push_back(cell.overlaps ? std::optional<double>(cell.overlap / cell.overlaps) : std::nullopt);
    }
    const double n0 = s.ranks.front(), t0 = s.throughput.front();
    for (std::size_t i = 0; i < s.ranks.size(); ++i) {
      s.ideal.push_back(mode == ScalingMode::strong ? t0 * s.ranks[i] / n0 : t0);
      s.efficiency.push_back(s.ideal.back() > 0 ? 100.0 * s.throughput[i] / s.ideal.back() : 0.0);
    }
    out.push_back(std::move(s));
  }
  if (out.empty()) no_rows(t, "(every scheme was measured at one rank count only: nothing scales)");
  return out;
}

namespace {

// The top row of the scaling figure: throughput with the ideal (dashed, same colour per scheme).
void throughput_panel(PlotScript& sc, const std::vector<ScalingSeries>& series, const std::string& unit, bool strong,
                      double ymax, const PanelBox& box) {
  sc.cmd("set origin " + gnuplot_number(box.origin_x) + "," + gnuplot_number(box.origin_y));
  sc.cmd("set size " + gnuplot_number(box.width) + "," + gnuplot_number(box.height));
  sc.cmd("set bmargin 1");
  sc.cmd("set format x ''");
  sc.cmd("set ylabel " + quote(strong ? unit + " (whole job)" : unit + " per rank"));
  sc.cmd("set yrange [0:" + gnuplot_number(ymax * 1.12) + "]");
  // Strong-scaling lines rise to the right and weak-scaling ones fall: keep the key in the empty corner.
  sc.cmd(std::string("set key ") + (strong ? "top" : "bottom") + " left reverse Left box opaque samplen 3");
  std::string plot = "plot ";
  for (const auto& s : series)
    plot += "'-' using 1:2 with linespoints lw 2 pt 7 ps 1.1 lc rgb '" + series_color(s.color) + "' title " +
            quote(s.label) + ", '-' using 1:2 with lines lw 1.5 dt 2 lc rgb '" + series_color(s.color) + "' notitle, ";
  plot += "NaN with lines lw 1.5 dt 2 lc rgb 'black' title " +
          quote(strong ? "ideal (linear from the smallest rank count)" : "ideal (flat at the smallest rank count)");
  sc.cmd(plot);
  for (const auto& s : series) {
    std::vector<std::vector<double>> measured, ideal;
    for (std::size_t i = 0; i < s.ranks.size(); ++i) {
      measured.push_back({s.ranks[i], s.throughput[i]});
      ideal.push_back({s.ranks[i], s.ideal[i]});
    }
    sc.data(std::move(measured));
    sc.data(std::move(ideal));
  }
}

}  // namespace

void plot_scaling(const FigureOptions& o, const TrainingFilter& filter, const std::string& metric, ScalingMode mode) {
  image_format(o.render.output);
  const CsvTable t = CsvTable::read(o.input, {{train_csv::scheme},
                                              {train_csv::ranks},
                                              {metric},
                                              {train_csv::schedule, false},
                                              {train_csv::model, false},
                                              {train_csv::device, false},
                                              {train_csv::impl, false},
                                              {train_csv::predicted, false},
                                              {train_csv::overlap, false}});
  std::string common;
  std::vector<std::string> single, devices;
  const std::vector<ScalingSeries> series = scaling_series(t, filter, metric, mode, &common, &single, &devices);
  std::set<double> ranks;
  double ymax = 0, emax = 100;
  for (const auto& s : series) {
    ranks.insert(s.ranks.begin(), s.ranks.end());
    for (std::size_t i = 0; i < s.ranks.size(); ++i) {
      ymax = std::max({ymax, s.throughput[i], s.ideal[i]});
      emax = std::max(emax, s.efficiency[i]);
    }
  }
  const std::string unit = metric == train_csv::tokens_per_s ? "tokens/s" : "samples/s";
  const bool strong = mode == ScalingMode::strong;
  const std::string base = strong ? "Strong scaling: " + unit + " vs ranks" : "Weak scaling: " + unit + " per rank vs ranks";

  PlotScript sc;
  sc.cmd("set encoding utf8");
  sc.cmd("set multiplot title " + heading(o, base, common, devices) + title_font(o.render.size));
  sc.cmd("set lmargin 12");
  sc.cmd("set rmargin 4");
  integer_axis(sc, "x", ranks);
  sc.cmd("set grid xtics ytics lc rgb '#d0d0d0'");
  // More series than a panel holds: a column of rows per share, on the same axes. A CSV with overlap values gets a
  // third row under the efficiency; one without keeps the two-row layout. The top row ends below the two-line title.
  const bool overlap = any_overlap(series);
  const std::vector<std::vector<ScalingSeries>> parts = split_series(series);
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const double x = static_cast<double>(p) / parts.size(), w = 1.0 / parts.size();
    if (overlap) {
      throughput_panel(sc, parts[p], unit, strong, ymax, {x, w, 0.5, 0.41, false});
      efficiency_panel(sc, parts[p], emax, {x, w, 0.27, 0.23, false});
      overlap_panel(sc, parts[p], {x, w, 0, 0.27, true});
    } else {
      throughput_panel(sc, parts[p], unit, strong, ymax, {x, w, 0.34, 0.57, false});
      efficiency_panel(sc, parts[p], emax, {x, w, 0, 0.34, true});
    }
  }
  sc.cmd("unset multiplot");
  finish(sc, o);
  for (const std::string& label : single)
    std::fprintf(stderr, "note: '%s' left out: measured at one rank count only\n", label.c_str());
}

// ---- bubble --------------------------------------------------------------------------------------

std::vector<BubbleSeries> bubble_series(const CsvTable& t, const TrainingFilter& filter, std::string* common,
                                        std::vector<std::string>* devices) {
  const std::vector<KeyField> fields = {
      {train_csv::schedule, as_is, true}, {train_csv::pp, with_pattern("pp=", "")},
      {train_csv::scheme, as_is},         {train_csv::model, as_is},
      {train_csv::device, as_is, false, false}, {train_csv::ranks, with_pattern("", " ranks")}};
  struct Acc {
    std::map<double, std::pair<double, int>> measured, theory, replayed;
  };
  const bool has_replay = t.has_column(train_csv::bubble_replayed);
  std::map<Key, Acc, decltype(&key_less)> grouped(&key_less);
  std::vector<Key> keys;
  for (std::size_t r = 0; r < t.size(); ++r) {
    if (!keep_row(t, r, filter)) continue;
    const std::optional<double> measured = t.optional_number(r, train_csv::bubble_measured);
    const std::optional<double> theory = t.optional_number(r, train_csv::bubble_theory);
    if (!measured && !theory) continue;  // not a pipeline run
    if (t.empty(r, train_csv::schedule)) continue;
    const double m = static_cast<double>(t.integer(r, train_csv::microbatches));
    Key key = row_key(t, r, fields);
    Acc& acc = grouped[key];
    // Fractions of the step in the CSV, percent on the figure.
    if (measured) acc.measured[m].first += 100 * *measured, acc.measured[m].second += 1;
    if (theory) acc.theory[m].first += 100 * *theory, acc.theory[m].second += 1;
    if (const auto replayed = has_replay ? t.optional_number(r, train_csv::bubble_replayed) : std::nullopt)
      acc.replayed[m].first += 100 * *replayed, acc.replayed[m].second += 1;
    keys.push_back(std::move(key));
  }
  if (keys.empty()) no_rows(t, "(no row with a schedule and bubble values passes the filters)");
  const std::vector<bool> varies = varying_fields(keys);
  if (common) *common = common_values(keys, fields, varies);
  if (devices) *devices = field_values(keys, 4);
  const std::vector<Key> distinct = sorted_distinct(keys);
  std::vector<BubbleSeries> out;
  for (auto& [key, acc] : grouped) {
    BubbleSeries s;
    s.label = key_label(key, fields, varies);
    s.color = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), key, key_less) - distinct.begin());
    for (auto& [m, sum] : acc.measured) s.measured.emplace_back(m, sum.first / sum.second);
    for (auto& [m, sum] : acc.theory) s.theory.emplace_back(m, sum.first / sum.second);
    for (auto& [m, sum] : acc.replayed) s.replayed.emplace_back(m, sum.first / sum.second);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ColumnSpec> bubble_columns() {
  return {{train_csv::schedule},      {train_csv::microbatches},           {train_csv::bubble_measured},
          {train_csv::bubble_theory}, {train_csv::bubble_replayed, false}, {train_csv::scheme},
          {train_csv::pp, false},     {train_csv::model, false},           {train_csv::device, false},
          {train_csv::ranks, false}};
}

void plot_bubble(const FigureOptions& o, const TrainingFilter& filter) {
  image_format(o.render.output);
  const CsvTable t = CsvTable::read(o.input, bubble_columns());
  std::string common;
  std::vector<std::string> devices;
  const std::vector<BubbleSeries> series = bubble_series(t, filter, &common, &devices);
  std::set<double> micro;
  double ymax = 0;
  for (const auto& s : series) {
    for (auto [x, y] : s.measured) micro.insert(x), ymax = std::max(ymax, y);
    for (auto [x, y] : s.theory) micro.insert(x), ymax = std::max(ymax, y);
    for (auto [x, y] : s.replayed) micro.insert(x), ymax = std::max(ymax, y);
  }
  const std::vector<std::vector<BubbleSeries>> parts = split_series(series);
  const std::string title = heading(o, "Pipeline bubble vs microbatches", common, devices);
  PlotScript sc;
  sc.cmd("set encoding utf8");
  // More schedules than a panel holds: panels side by side on the same axes.
  if (parts.size() > 1)
    sc.cmd("set multiplot layout 1," + std::to_string(parts.size()) + " title " + title + title_font(o.render.size));
  else
    sc.cmd("set title " + title + title_font(o.render.size));
  integer_axis(sc, "x", micro);
  sc.cmd("set xlabel 'microbatches per step'");
  sc.cmd("set ylabel 'bubble (% of step time)'");
  sc.cmd("set yrange [0:" + gnuplot_number(std::max(1.0, ymax * 1.15)) + "]");
  sc.cmd("set grid xtics ytics lc rgb '#d0d0d0'");
  sc.cmd("set key top right reverse Left box opaque samplen 3");
  const bool any_replay = std::any_of(series.begin(), series.end(), [](const auto& s) { return !s.replayed.empty(); });
  for (const std::vector<BubbleSeries>& part : parts) {
    std::string plot = "plot ";
    std::vector<const std::vector<std::pair<double, double>>*> blocks;
    for (const auto& s : part) {
      if (!s.measured.empty()) {
        plot += "'-' using 1:2 with linespoints lw 2 pt " + std::to_string(series_point(s.color)) + " ps 1.2 lc rgb '" +
                series_color(s.color) + "' title " + quote(s.label) + ", ";
        blocks.push_back(&s.measured);
      }
      if (!s.theory.empty()) {
        plot += "'-' using 1:2 with linespoints lw 1.5 dt 2 pt " + std::to_string(series_point(s.color, true)) +
                " ps 1 lc rgb '" + series_color(s.color) + "' " +
                (s.measured.empty() ? "title " + quote(s.label + " (theory only)") : std::string("notitle")) + ", ";
        blocks.push_back(&s.theory);
      }
      if (!s.replayed.empty()) {
        plot += "'-' using 1:2 with lines lw 1.5 dt 3 lc rgb '" + series_color(s.color) + "' notitle, ";
        blocks.push_back(&s.replayed);
      }
    }
    plot += "NaN with linespoints lw 2 pt 5 lc rgb 'black' title 'measured', "
            "NaN with linespoints lw 1.5 dt 2 pt 4 lc rgb 'black' title 'theory'";
    if (any_replay) plot += ", NaN with lines lw 1.5 dt 3 lc rgb 'black' title 'replayed from measured action times'";
    sc.cmd(plot);
    for (const auto* b : blocks) {
      std::vector<std::vector<double>> rows;
      for (auto [x, y] : *b) rows.push_back({x, y});
      sc.data(std::move(rows));
    }
  }
  if (parts.size() > 1) sc.cmd("unset multiplot");
  finish(sc, o);
}

}  // namespace parbench::plots
