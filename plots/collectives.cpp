// busbw and latency: a collectives CSV (bench_allreduce and friends) as one log-log panel per collective (and
// rank count) and one line per implementation (and whatever else varies; in-place dashed).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "core/csv_columns.h"
#include "core/sizes.h"
#include "base/text.h"
#include "plots/figures.h"
#include "plots/grouping.h"

namespace parbench::plots {
namespace coll_csv = csv::collective;
namespace {

std::string inplace_words(const std::string& v) {
  if (v == "1" || v == "true" || v == "yes") return "in-place";
  if (v == "0" || v == "false" || v == "no") return "out-of-place";
  return "inplace=" + v;
}

std::vector<KeyField> collective_key_fields() {
  return {{coll_csv::impl, as_is, true},
          {coll_csv::device, as_is},
          {coll_csv::ranks, with_pattern("", " ranks")},
          {coll_csv::nodes, with_pattern("", " nodes"), false, false},
          {coll_csv::dtype, as_is},
          {coll_csv::op, as_is, false, false},
          {coll_csv::inplace, inplace_words, false, false},
          {coll_csv::root, with_pattern("root ", ""), false, false}};
}

std::string values_of(const CsvTable& t, const std::string& column) {
  std::set<std::string> values;
  for (std::size_t r = 0; r < t.size(); ++r) values.insert(t.text(r, column));
  return join(values);
}

std::string join_numbers(const std::vector<std::int64_t>& v) {
  return join(v, ",", [](std::int64_t x) { return std::to_string(x); });
}

std::string join_words(const std::vector<std::string>& v) { return join(v, ","); }

}  // namespace

std::vector<ColumnSpec> collective_columns(const std::string& y_column) {
  return {{coll_csv::collective},    {coll_csv::impl},          {coll_csv::ranks},
          {coll_csv::dtype},         {coll_csv::bytes},         {y_column},
          {coll_csv::device, false}, {coll_csv::nodes, false},  {coll_csv::op, false},
          {coll_csv::root, false},   {coll_csv::inplace, false}};
}

namespace {

struct PlotRow {
  std::string collective;
  std::int64_t ranks;
  Key key;
  double bytes, y;
};

[[noreturn]] void no_rows(const CsvTable& table, const CollectiveFilter& filter, const std::string& y_column,
                          double max_bytes, std::size_t skipped) {
  std::string why = table.path() + ": no rows to plot";
  if (!filter.collectives.empty() || !filter.dtypes.empty() || !filter.impls.empty() || !filter.ranks.empty())
    why += " after the filters (--collective " + join_words(filter.collectives) + " --dtype " +
           join_words(filter.dtypes) + " --impl " + join_words(filter.impls) + " --ranks " +
           join_numbers(filter.ranks) + "); the file has collectives " + values_of(table, coll_csv::collective) +
           "; dtypes " + values_of(table, coll_csv::dtype) + "; impls " + values_of(table, coll_csv::impl) +
           "; ranks " + values_of(table, coll_csv::ranks);
  if (skipped) why += " (" + std::to_string(skipped) + " rows had " + y_column + " <= 0 or bytes <= 0)";
  if (max_bytes < 1e300) why += " with bytes <= " + format_size(static_cast<std::uint64_t>(max_bytes));
  throw UsageError(why);
}

// The rows the filters keep and a log axis can show; *skipped counts those with no place on it.
std::vector<PlotRow> select_rows(const CsvTable& table, const CollectiveFilter& filter, const std::string& y_column,
                                 double max_bytes, const std::vector<KeyField>& fields, std::size_t* skipped) {
  std::vector<PlotRow> rows;
  *skipped = 0;
  for (std::size_t r = 0; r < table.size(); ++r) {
    const std::int64_t ranks = table.integer(r, coll_csv::ranks);
    const double bytes = table.number(r, coll_csv::bytes);
    const double y = table.number(r, y_column);
    if (!wanted(filter.collectives, table.text(r, coll_csv::collective)) ||
        !wanted(filter.dtypes, table.text(r, coll_csv::dtype)) ||
        !wanted(filter.impls, table.text(r, coll_csv::impl)) ||
        !(filter.ranks.empty() || std::count(filter.ranks.begin(), filter.ranks.end(), ranks)))
      continue;
    if (bytes > max_bytes) continue;
    if (bytes <= 0 || y <= 0) {  // no place on a log axis (e.g. busbw of one rank is 0)
      ++*skipped;
      continue;
    }
    Key key;
    for (const KeyField& f : fields) key.push_back(table.text(r, f.column));
    key[2] = std::to_string(ranks);  // "8" and "8.0" are one rank count
    rows.push_back({table.text(r, coll_csv::collective), ranks, std::move(key), bytes, y});
  }
  return rows;
}

}  // namespace

std::vector<Panel> collective_panels(const CsvTable& table, const CollectiveFilter& filter,
                                     const std::string& y_column, double max_bytes, std::string* common,
                                     std::size_t* dropped) {
  const std::vector<KeyField> fields = collective_key_fields();
  std::size_t skipped = 0;
  const std::vector<PlotRow> rows = select_rows(table, filter, y_column, max_bytes, fields, &skipped);
  if (dropped) *dropped = skipped;
  if (rows.empty()) no_rows(table, filter, y_column, max_bytes, skipped);

  std::vector<Key> keys;
  for (const PlotRow& row : rows) keys.push_back(row.key);
  const std::vector<bool> varies = varying_fields(keys);
  // One panel per collective, and per rank count when that varies: every implementation at two rank counts in
  // one panel was too many lines to read. The panel's title then names the rank count, the lines do not, and a
  // line keeps its colour from panel to panel.
  const bool per_ranks = varies[2];
  // Out-of-place and in-place halves of one implementation share a colour (in-place dashed).
  auto colour_key = [&](Key k) {
    if (per_ranks) k[2].clear();
    k[6].clear();
    return k;
  };
  std::vector<Key> distinct;
  for (const Key& k : keys) distinct.push_back(colour_key(k));
  std::sort(distinct.begin(), distinct.end(), key_less);
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  auto color_of = [&](const Key& k) {
    return static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), colour_key(k), key_less) -
                            distinct.begin());
  };

  std::vector<bool> label_varies = varies;
  if (per_ranks) label_varies[2] = false;
  // (collective, ranks) -> key -> bytes -> (sum, count)
  using ByKey = std::map<Key, std::map<double, std::pair<double, int>>, decltype(&key_less)>;
  std::map<std::pair<std::string, std::int64_t>, ByKey> grouped;
  std::set<std::string> collectives;
  for (const PlotRow& row : rows) {
    auto it = grouped.try_emplace({row.collective, per_ranks ? row.ranks : 0}, &key_less).first;
    auto& point = it->second[row.key][row.bytes];
    point.first += row.y;
    point.second += 1;
    collectives.insert(row.collective);
  }
  std::vector<Panel> panels;
  for (auto& [where, by_key] : grouped) {
    Panel panel;
    panel.title = where.first + (per_ranks ? ", " + std::to_string(where.second) + " ranks" : "");
    for (auto& [key, by_bytes] : by_key) {
      Series s;
      s.label = key_label(key, fields, label_varies);
      s.color = color_of(key);
      s.dashed = varies[6] && inplace_words(key[6]) == "in-place";
      for (auto& [bytes, sum] : by_bytes) s.points.emplace_back(bytes, sum.first / sum.second);
      panel.series.push_back(std::move(s));
    }
    panels.push_back(std::move(panel));
  }
  if (common) {
    *common = common_values(keys, fields, varies);
    if (collectives.size() == 1) *common = *collectives.begin() + (common->empty() ? "" : ", " + *common);
  }
  return panels;
}

namespace {

enum class CollectiveFigure { busbw, latency };

void plot_collectives(const FigureOptions& options, const CollectiveFilter& filter, CollectiveFigure figure,
                      double max_bytes) {
  image_format(options.render.output);  // a bad extension is reported before the input is read
  const std::string y_column = figure == CollectiveFigure::busbw ? coll_csv::busbw_gbps : coll_csv::time_us;
  const CsvTable table = CsvTable::read(options.input, collective_columns(y_column));
  std::string common;
  std::size_t dropped = 0;
  const std::vector<Panel> panels = collective_panels(table, filter, y_column, max_bytes, &common, &dropped);

  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const Panel& p : panels)
    for (const Series& s : p.series)
      for (auto [x, y] : s.points) {
        xmin = std::min(xmin, x), xmax = std::max(xmax, x);
        ymin = std::min(ymin, y), ymax = std::max(ymax, y);
      }
  const int n = static_cast<int>(panels.size());
  const int cols = n == 1 ? 1 : n <= 4 ? 2 : 3;
  const int rows = (n + cols - 1) / cols;

  std::string title = options.title;
  if (title.empty()) {
    title = figure == CollectiveFigure::busbw ? "Bus bandwidth vs message size" : "Latency of small messages";
    if (!common.empty()) title += " (" + common + ")";
  }
  PlotScript sc;
  sc.cmd("set encoding utf8");
  sc.cmd("set logscale x 2");
  sc.cmd(size_tics_command("x", xmin, xmax, cols == 1 ? 14 : 8));
  sc.cmd("set xrange [" + std::to_string(xmin / 1.3) + ":" + std::to_string(xmax * 1.3) + "]");
  sc.cmd("set xlabel 'message size (bytes; K, M, G = 2^10, 2^20, 2^30)'");
  if (figure == CollectiveFigure::busbw) {
    sc.cmd("set logscale y 10");
    sc.cmd("set ylabel 'bus bandwidth (GB/s, 1e9 B/s)'");
    sc.cmd("set format y '%g'");
  } else {
    sc.cmd("set ylabel 'time per operation (us)'");
    if (ymax / ymin > 20) {
      sc.cmd("set logscale y 10");
      sc.cmd("set format y '%g'");
    } else {
      sc.cmd("set yrange [0:*]");
    }
  }
  sc.cmd("set grid xtics ytics lc rgb '#d0d0d0' lw 1");
  sc.cmd("set key top left reverse Left box opaque samplen 2 spacing 1.1");
  if (n > 1) {
    sc.cmd("set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) + " title " + quote(title) +
           title_font(options.render.size));
  } else {
    sc.cmd("set title " + quote(title) + title_font(options.render.size));
  }
  for (const Panel& panel : panels) {
    if (n > 1) sc.cmd("set title " + quote(panel.title) + title_font(options.render.size, 2));
    std::string plot = "plot ";
    for (std::size_t i = 0; i < panel.series.size(); ++i) {
      const Series& s = panel.series[i];
      plot += std::string(i ? ", " : "") + "'-' using 1:2 with linespoints lw 2 pt " +
              std::to_string(5 + 2 * (s.color / 10 % 3) + (s.dashed ? 1 : 0)) + " ps 0.9 dt " +
              std::to_string(s.dashed ? 2 : 1 + s.color / 10) +
              " lc rgb '" + series_color(s.color) + "' title " + quote(s.label);
    }
    sc.cmd(plot);
    for (const Series& s : panel.series) {
      std::vector<std::vector<double>> data;
      for (auto [x, y] : s.points) data.push_back({x, y});
      sc.data(std::move(data));
    }
  }
  if (n > 1) sc.cmd("unset multiplot");
  const std::string warnings = render(sc, options.render);
  if (dropped)
    std::fprintf(stderr, "note: %zu rows with %s <= 0 left out (no place on a log axis)\n", dropped,
                 y_column.c_str());
  if (!warnings.empty()) std::fprintf(stderr, "gnuplot: %s", warnings.c_str());
}

}  // namespace

void plot_busbw(const FigureOptions& options, const CollectiveFilter& filter) {
  plot_collectives(options, filter, CollectiveFigure::busbw, 1e308);
}

void plot_latency(const FigureOptions& options, const CollectiveFilter& filter, std::uint64_t max_bytes) {
  plot_collectives(options, filter, CollectiveFigure::latency, static_cast<double>(max_bytes));
}

}  // namespace parbench::plots
