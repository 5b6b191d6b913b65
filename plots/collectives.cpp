// busbw and latency: a collectives CSV (bench_allreduce and friends) as one log-log panel per collective (and
// rank count) and one line per implementation (and whatever else varies; in-place dashed).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"
#include "core/csv_columns.h"
#include "app/sizes.h"
#include "base/text.h"
#include "plots/figures.h"
#include "plots/grouping.h"
#include "plots/scaling_panels.h"  // gnuplot_number

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
          {coll_csv::device, as_is, false, false},  // the caption names it
          {coll_csv::ranks, with_pattern("", " ranks")},
          {coll_csv::nodes, with_pattern("", " nodes"), false, false},
          {coll_csv::dtype, as_is},
          {coll_csv::op, as_is, false, false},
          {coll_csv::inplace, inplace_words, false, false},
          {coll_csv::root, with_pattern("root ", ""), false, false}};
}

// Key fields the panels treat apart (indices into collective_key_fields).
constexpr std::size_t kDeviceField = 1, kRanksField = 2, kInplaceField = 6;

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
    key[kRanksField] = std::to_string(ranks);  // "8" and "8.0" are one rank count
    rows.push_back({table.text(r, coll_csv::collective), ranks, std::move(key), bytes, y});
  }
  return rows;
}

// Series colours: one per implementation (and whatever else varies), shared by its out-of-place and in-place
// halves (in-place dashed) and, with a panel per rank count, by its lines in every panel, so that a line keeps
// its colour from panel to panel.
class ColourIndex {
 public:
  ColourIndex(const std::vector<Key>& keys, bool per_ranks) : per_ranks_(per_ranks) {
    for (const Key& k : keys) distinct_.push_back(colour_key(k));
    std::sort(distinct_.begin(), distinct_.end(), key_less);
    distinct_.erase(std::unique(distinct_.begin(), distinct_.end()), distinct_.end());
  }
  int of(const Key& k) const {
    return static_cast<int>(std::lower_bound(distinct_.begin(), distinct_.end(), colour_key(k), key_less) -
                            distinct_.begin());
  }
  // Every colour in use, ascending.
  std::vector<int> all() const {
    std::vector<int> colors;
    for (const Key& k : distinct_) colors.push_back(of(k));
    return colors;
  }

 private:
  Key colour_key(Key k) const {
    if (per_ranks_) k[kRanksField].clear();
    k[kInplaceField].clear();
    return k;
  }
  bool per_ranks_;
  std::vector<Key> distinct_;
};

// bytes -> (sum, count): repeated sizes of a series are averaged into one point.
using SizeSums = std::map<double, std::pair<double, int>>;
using SeriesRows = std::map<Key, SizeSums, decltype(&key_less)>;
// (collective, rank count or 0 when the panels are not per rank count) -> its series.
using PanelRows = std::map<std::pair<std::string, std::int64_t>, SeriesRows>;

PanelRows group_by_panel(const std::vector<PlotRow>& rows, bool per_ranks) {
  PanelRows grouped;
  for (const PlotRow& row : rows) {
    auto it = grouped.try_emplace({row.collective, per_ranks ? row.ranks : 0}, &key_less).first;
    auto& point = it->second[row.key][row.bytes];
    point.first += row.y;
    point.second += 1;
  }
  return grouped;
}

// Which key fields a series' label and its key entry name.
struct SeriesNaming {
  std::vector<bool> varies;         // over all rows
  std::vector<bool> label_varies;   // less the rank count when the panel title names it
  std::vector<bool> legend_varies;  // less the in-place half too, which the key names once, as a line style
};

SeriesNaming series_naming(const std::vector<bool>& varies, bool per_ranks) {
  SeriesNaming naming{varies, varies, {}};
  if (per_ranks) naming.label_varies[kRanksField] = false;
  naming.legend_varies = naming.label_varies;
  naming.legend_varies[kInplaceField] = false;
  return naming;
}

Series make_series(const Key& key, const SizeSums& by_bytes, int color, const std::vector<KeyField>& fields,
                   const SeriesNaming& naming) {
  Series s;
  s.color = color;
  s.label = key_label(key, fields, naming.label_varies);
  s.legend = key_label(key, fields, naming.legend_varies);
  s.dashed = naming.varies[kInplaceField] && inplace_words(key[kInplaceField]) == "in-place";
  for (auto& [bytes, sum] : by_bytes) s.points.emplace_back(bytes, sum.first / sum.second);
  return s;
}

std::string panel_title(const std::pair<std::string, std::int64_t>& where, bool per_ranks, std::size_t part,
                        std::size_t parts) {
  std::string title = where.first + (per_ranks ? ", " + std::to_string(where.second) + " ranks" : "");
  if (parts > 1) title += " (" + std::to_string(part + 1) + " of " + std::to_string(parts) + ")";
  return title;
}

// More series than a panel holds: each collective (and rank count) gets one panel per share of the colours,
// the same shares everywhere, so a column of the grid shows the same implementations.
std::vector<Panel> build_panels(const PanelRows& grouped, const ColourIndex& colours,
                                const std::vector<KeyField>& fields, const SeriesNaming& naming, bool per_ranks) {
  const std::vector<std::vector<int>> parts = split_colors(colours.all());
  std::vector<Panel> panels;
  for (const auto& [where, by_key] : grouped) {
    for (std::size_t p = 0; p < parts.size(); ++p) {
      Panel panel;
      panel.title = panel_title(where, per_ranks, p, parts.size());
      panel.part = static_cast<int>(p);
      panel.parts = static_cast<int>(parts.size());
      for (const auto& [key, by_bytes] : by_key) {
        const int color = colours.of(key);
        if (std::binary_search(parts[p].begin(), parts[p].end(), color))
          panel.series.push_back(make_series(key, by_bytes, color, fields, naming));
      }
      panels.push_back(std::move(panel));
    }
  }
  return panels;
}

std::vector<std::string> device_names(const std::vector<Key>& keys) {
  std::set<std::string> names;
  for (const Key& k : keys)
    if (!k[kDeviceField].empty()) names.insert(k[kDeviceField]);
  return {names.begin(), names.end()};
}

// The values every row shares, for the title; the collective leads when there is one only.
std::string common_title(const std::vector<PlotRow>& rows, const std::vector<Key>& keys,
                         const std::vector<KeyField>& fields, const std::vector<bool>& varies) {
  std::set<std::string> collectives;
  for (const PlotRow& row : rows) collectives.insert(row.collective);
  std::string common = common_values(keys, fields, varies);
  if (collectives.size() == 1) common = *collectives.begin() + (common.empty() ? "" : ", " + common);
  return common;
}

}  // namespace

std::vector<Panel> collective_panels(const CsvTable& table, const CollectiveFilter& filter,
                                     const std::string& y_column, double max_bytes, std::string* common,
                                     std::size_t* dropped, std::vector<std::string>* devices) {
  const std::vector<KeyField> fields = collective_key_fields();
  std::size_t skipped = 0;
  const std::vector<PlotRow> rows = select_rows(table, filter, y_column, max_bytes, fields, &skipped);
  if (dropped) *dropped = skipped;
  if (rows.empty()) no_rows(table, filter, y_column, max_bytes, skipped);

  std::vector<Key> keys;
  for (const PlotRow& row : rows) keys.push_back(row.key);
  const std::vector<bool> varies = varying_fields(keys);
  // One panel per collective, and per rank count when that varies: every implementation at two rank counts in
  // one panel was too many lines to read. The panel's title then names the rank count, the lines do not.
  const bool per_ranks = varies[kRanksField];
  std::vector<Panel> panels = build_panels(group_by_panel(rows, per_ranks), ColourIndex(keys, per_ranks), fields,
                                           series_naming(varies, per_ranks), per_ranks);
  if (devices) *devices = device_names(keys);
  if (common) *common = common_title(rows, keys, fields, varies);
  return panels;
}

namespace {

enum class CollectiveFigure { busbw, latency };

// The range of every point: all panels share their axes.
struct Extent {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
};

Extent extent_of(const std::vector<Panel>& panels) {
  Extent e;
  for (const Panel& p : panels)
    for (const Series& s : p.series)
      for (auto [x, y] : s.points) {
        e.xmin = std::min(e.xmin, x), e.xmax = std::max(e.xmax, x);
        e.ymin = std::min(e.ymin, y), e.ymax = std::max(e.ymax, y);
      }
  return e;
}

// Columns of the panel grid. Split series: a column per share, a row per collective (and rank count).
int grid_columns(const std::vector<Panel>& panels) {
  const std::size_t n = panels.size();
  return panels[0].parts > 1 ? panels[0].parts : n == 1 ? 1 : n <= 4 ? 2 : 3;
}

std::string figure_title(const FigureOptions& options, CollectiveFigure figure, const std::string& common) {
  if (!options.title.empty()) return options.title;
  std::string title = figure == CollectiveFigure::busbw ? "Bus bandwidth vs message size" : "Latency of small messages";
  if (!common.empty()) title += " (" + common + ")";
  return title;
}

void x_axis(PlotScript& sc, const Extent& e, int cols) {
  sc.cmd("set logscale x 2");
  sc.cmd(size_tics_command("x", e.xmin, e.xmax, cols == 1 ? 14 : 8));
  sc.cmd("set xrange [" + std::to_string(e.xmin / 1.3) + ":" + std::to_string(e.xmax * 1.3) + "]");
  sc.cmd("set xlabel 'message size (bytes; K, M, G = 2^10, 2^20, 2^30)'");
}

// Bandwidth on a log axis; latency on a linear one unless it spans more than 20x.
void y_axis(PlotScript& sc, CollectiveFigure figure, const Extent& e) {
  // One y range for every panel, so that panels side by side compare at a glance.
  const std::string log_range =
      "set yrange [" + gnuplot_number(e.ymin / 1.6) + ":" + gnuplot_number(e.ymax * 1.6) + "]";
  if (figure == CollectiveFigure::busbw) {
    sc.cmd("set logscale y 10");
    sc.cmd(log_range);
    sc.cmd("set ylabel 'bus bandwidth (GB/s, 1e9 B/s)'");
    sc.cmd("set format y '%g'");
    return;
  }
  sc.cmd("set ylabel 'time per operation (us)'");
  if (e.ymax / e.ymin > 20) {
    sc.cmd("set logscale y 10");
    sc.cmd(log_range);
    sc.cmd("set format y '%g'");
  } else {
    sc.cmd("set yrange [0:" + gnuplot_number(e.ymax * 1.15) + "]");
  }
}

// Both halves in the figure (out-of-place solid, in-place dashed): the key then names the line styles.
bool both_halves(const std::vector<Panel>& panels) {
  bool any_dashed = false, any_solid = false;
  for (const Panel& p : panels)
    for (const Series& s : p.series) (s.dashed ? any_dashed : any_solid) = true;
  return any_dashed && any_solid;
}

// One key entry per colour (the first line of it); the halves are named once, as line styles.
std::string plot_command(const Panel& panel, bool style_key) {
  std::string plot = "plot ";
  std::set<int> named;
  for (std::size_t i = 0; i < panel.series.size(); ++i) {
    const Series& s = panel.series[i];
    const bool first = named.insert(s.color).second;
    plot += std::string(i ? ", " : "") + "'-' using 1:2 with linespoints lw 2 pt " +
            std::to_string(series_point(s.color, s.dashed)) + " ps 0.9 dt " + (s.dashed ? "2" : "1") + " lc rgb '" +
            series_color(s.color) + "' " + (first ? "title " + quote(s.legend) : std::string("notitle"));
  }
  if (style_key)
    plot += ", NaN with linespoints lw 2 pt 5 ps 0.9 dt 1 lc rgb 'black' title 'out-of-place', "
            "NaN with linespoints lw 2 pt 4 ps 0.9 dt 2 lc rgb 'black' title 'in-place'";
  return plot;
}

void draw_panels(PlotScript& sc, const std::vector<Panel>& panels, const ImageSize& size) {
  const bool style_key = both_halves(panels);
  for (const Panel& panel : panels) {
    if (panel.series.empty()) {  // no rows of this share here: its place stays blank
      sc.cmd("set multiplot next");
      continue;
    }
    if (panels.size() > 1) sc.cmd("set title " + quote(panel.title) + title_font(size, 2));
    sc.cmd(plot_command(panel, style_key));
    for (const Series& s : panel.series) {
      std::vector<std::vector<double>> data;
      for (auto [x, y] : s.points) data.push_back({x, y});
      sc.data(std::move(data));
    }
  }
}

void plot_collectives(const FigureOptions& options, const CollectiveFilter& filter, CollectiveFigure figure,
                      double max_bytes) {
  image_format(options.render.output);  // a bad extension is reported before the input is read
  const std::string y_column = figure == CollectiveFigure::busbw ? coll_csv::busbw_gbps : coll_csv::time_us;
  const CsvTable table = CsvTable::read(options.input, collective_columns(y_column));
  std::string common;
  std::size_t dropped = 0;
  std::vector<std::string> devices;
  const std::vector<Panel> panels =
      collective_panels(table, filter, y_column, max_bytes, &common, &dropped, &devices);
  const Extent extent = extent_of(panels);
  const int n = static_cast<int>(panels.size());
  const int cols = grid_columns(panels);
  const int rows = (n + cols - 1) / cols;

  PlotScript sc;
  sc.cmd("set encoding utf8");
  x_axis(sc, extent, cols);
  y_axis(sc, figure, extent);
  sc.cmd("set grid xtics ytics lc rgb '#d0d0d0' lw 1");
  // Both rise to the right from small values at small sizes: the top left is the emptiest corner.
  sc.cmd("set key top left reverse Left box opaque samplen 3.5 spacing 1.1");
  const std::string heading =
      quote_lines({figure_title(options, figure, common), machine_caption(options.machine, devices)});
  if (n > 1) {
    sc.cmd("set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) + " title " + heading +
           title_font(options.render.size));
  } else {
    sc.cmd("set title " + heading + title_font(options.render.size));
  }
  draw_panels(sc, panels, options.render.size);
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
