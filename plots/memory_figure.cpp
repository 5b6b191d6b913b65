// memory: one stacked bar of per-rank peak bytes by category per scheme (and whatever else varies between rows)
// of a training CSV (bench_train), with the closed-form estimate beside it when the CSV has one.
#include <algorithm>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "core/csv_columns.h"
#include "plots/figures.h"
#include "plots/grouping.h"
#include "plots/scaling_panels.h"  // gnuplot_number
#include "plots/training_common.h"

namespace parbench::plots {
namespace train_csv = csv::train;

std::vector<MemoryBar> memory_bars(const CsvTable& t, const TrainingFilter& filter, std::string* common,
                                   std::vector<std::string>* devices) {
  const std::vector<KeyField> fields = {{train_csv::scheme, as_is, true},
                                        {train_csv::schedule, as_is},
                                        {train_csv::ranks, with_pattern("", " ranks")},
                                        {train_csv::tp, with_pattern("tp=", ""), false, false},
                                        {train_csv::pp, with_pattern("pp=", ""), false, false},
                                        {train_csv::dp, with_pattern("dp=", ""), false, false},
                                        {train_csv::model, as_is},
                                        {train_csv::device, as_is, false, false},  // the caption names it
                                        {train_csv::impl, as_is}};
  struct Acc {
    std::vector<double> bytes = std::vector<double>(kMemoryCategories.size(), 0.0);
    double estimate = 0;
    int rows = 0, estimates = 0;
  };
  std::map<Key, Acc, decltype(&key_less)> grouped(&key_less);
  std::vector<Key> keys;
  for (std::size_t r = 0; r < t.size(); ++r) {
    if (!keep_row(t, r, filter)) continue;
    Key key = row_key(t, r, fields);
    Acc& acc = grouped[key];
    for (std::size_t c = 0; c < kMemoryCategories.size(); ++c) {
      const double v = t.number(r, kMemoryCategories[c]);
      if (v < 0)
        throw UsageError(t.path() + ":" + std::to_string(t.line(r)) + ": column '" + kMemoryCategories[c] +
                         "': negative byte count " + t.text(r, kMemoryCategories[c]));
      acc.bytes[c] += v;
    }
    acc.rows += 1;
    if (const auto e = t.optional_number(r, train_csv::estimate_bytes)) acc.estimate += *e, acc.estimates += 1;
    keys.push_back(std::move(key));
  }
  if (keys.empty()) no_rows(t, "(no row passes the filters)");
  const std::vector<bool> varies = varying_fields(keys);
  if (common) *common = common_values(keys, fields, varies);
  if (devices) *devices = field_values(keys, 7);
  std::vector<MemoryBar> out;
  for (auto& [key, acc] : grouped) {
    MemoryBar bar;
    bar.label = key_label(key, fields, varies);
    for (double b : acc.bytes) bar.bytes.push_back(b / acc.rows);
    if (acc.estimates) bar.estimate = acc.estimate / acc.estimates;
    out.push_back(std::move(bar));
  }
  return out;
}

namespace {

// Per kMemoryCategories: the name in the key and the colour of its boxes.
const char* const kCategoryNames[] = {"parameters", "gradients", "optimizer state", "activations",
                                      "communication buffers", "workspace"};
const char* const kCategoryColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"};

std::vector<ColumnSpec> memory_columns() {
  std::vector<ColumnSpec> columns = {{train_csv::scheme}};
  for (const std::string& c : kMemoryCategories) columns.push_back({c});
  for (const char* c : {train_csv::estimate_bytes, train_csv::schedule, train_csv::ranks, train_csv::tp, train_csv::pp,
                        train_csv::dp, train_csv::model, train_csv::device, train_csv::impl})
    columns.push_back({c, false});
  return columns;
}

double bar_total(const MemoryBar& bar) {
  double total = 0;
  for (double v : bar.bytes) total += v;
  return total;
}

// A tic per bar, named by its label.
void bar_tics(PlotScript& sc, const std::vector<MemoryBar>& bars) {
  std::size_t longest = 0;
  for (const auto& b : bars) longest = std::max(longest, b.label.size());
  std::string tics = "set xtics (";
  for (std::size_t i = 0; i < bars.size(); ++i)
    tics += (i ? ", " : "") + quote(bars[i].label) + " " + std::to_string(i);
  sc.cmd(tics + ")");
  // Long or many labels would run into each other: tilt them.
  if (bars.size() * std::max<std::size_t>(longest, 1) > 90) sc.cmd("set xtics rotate by -30 left");
  sc.cmd("set xtics nomirror scale 0");
}

// Each bar's total printed above it, in a unit of its own so that a small bar keeps readable digits; div: the
// y axis' unit.
void total_labels(PlotScript& sc, const std::vector<MemoryBar>& bars, double div, const ImageSize& size) {
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double total = bar_total(bars[i]);
    const auto [own_div, own_unit] = byte_unit(total);
    char text[64];
    std::snprintf(text, sizeof text, "%.3g %s", total / own_div, own_unit.c_str());
    sc.cmd("set label " + quote(text) + " at " + std::to_string(i) + "," + gnuplot_number(total / div) +
           " center offset 0,0.8 front" + (bars.size() > 8 ? title_font(size, -2) : std::string()));
  }
}

// The plot command's entries ("..., " each) and their data blocks, in the order gnuplot reads them.
struct Layers {
  std::string plot = "plot ";
  std::vector<std::vector<std::vector<double>>> blocks;
};

// A box per bar and category, stacked in kMemoryCategories' order; a category no bar has stays out of the key.
void add_categories(Layers& layers, const std::vector<MemoryBar>& bars, double div) {
  for (std::size_t c = 0; c < kMemoryCategories.size(); ++c) {
    std::vector<std::vector<double>> rows;
    for (std::size_t i = 0; i < bars.size(); ++i) {
      double below = 0;
      for (std::size_t k = 0; k < c; ++k) below += bars[i].bytes[k];
      const double v = bars[i].bytes[c];
      if (v <= 0) continue;
      const double x = static_cast<double>(i), y0 = below / div, y1 = (below + v) / div;
      rows.push_back({x, (y0 + y1) / 2, x - 0.35, x + 0.35, y0, y1});
    }
    if (rows.empty()) continue;
    layers.plot += "'-' using 1:2:3:4:5:6 with boxxyerror fs solid 0.9 border lc rgb 'white' lc rgb '" +
                   std::string(kCategoryColors[c]) + "' title " + quote(kCategoryNames[c]) + ", ";
    layers.blocks.push_back(std::move(rows));
  }
}

// A black line across each bar that has an estimate, at the estimate's height.
void add_estimates(Layers& layers, const std::vector<MemoryBar>& bars, double div) {
  std::vector<std::vector<double>> estimates;
  for (std::size_t i = 0; i < bars.size(); ++i)
    if (bars[i].estimate) estimates.push_back({static_cast<double>(i) - 0.45, *bars[i].estimate / div, 0.9, 0.0});
  if (estimates.empty()) return;
  layers.plot += "'-' using 1:2:3:4 with vectors nohead lw 3 lc rgb 'black' title 'closed-form estimate', ";
  layers.blocks.push_back(std::move(estimates));
}

}  // namespace

void plot_memory(const FigureOptions& o, const TrainingFilter& filter) {
  image_format(o.render.output);
  const CsvTable t = CsvTable::read(o.input, memory_columns());
  std::string common;
  std::vector<std::string> devices;
  const std::vector<MemoryBar> bars = memory_bars(t, filter, &common, &devices);
  double top = 0;
  for (const auto& b : bars) top = std::max({top, bar_total(b), b.estimate.value_or(0.0)});
  const auto [div, unit] = byte_unit(top);

  PlotScript sc;
  sc.cmd("set encoding utf8");
  sc.cmd("set title " + heading(o, "Per-rank peak memory by category", common, devices) + title_font(o.render.size));
  sc.cmd("set ylabel " + quote("memory per rank (" + unit + ")"));
  sc.cmd("set yrange [0:" + gnuplot_number(std::max(top / div, 1e-9) * 1.15) + "]");
  sc.cmd("set xrange [-0.6:" + gnuplot_number(static_cast<double>(bars.size()) - 0.4) + "]");
  sc.cmd("set grid ytics lc rgb '#d0d0d0'");
  sc.cmd("set key outside right top vertical reverse Left box samplen 2");
  bar_tics(sc, bars);
  total_labels(sc, bars, div, o.render.size);
  Layers layers;
  add_categories(layers, bars, div);
  add_estimates(layers, bars, div);
  if (layers.blocks.empty()) no_rows(t, "(every memory category is 0)");
  layers.plot.resize(layers.plot.size() - 2);  // the last entry's ", "
  sc.cmd(layers.plot);
  for (auto& b : layers.blocks) sc.data(std::move(b));
  finish(sc, o);
}

}  // namespace parbench::plots
