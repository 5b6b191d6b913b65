// links: bench_links' CSV as two heat maps, latency and bandwidth of every pair of ranks, each cell labelled with
// its value (up to 16 ranks) and the pairs bench_links found slow outlined.
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "core/csv_columns.h"
#include "plots/figures.h"
#include "plots/scaling_panels.h"  // gnuplot_number
#include "plots/training_common.h"

namespace parbench::plots {
namespace links_csv = csv::links;

LinkGrid link_grid(const CsvTable& t) {
  std::int64_t top = -1;
  for (std::size_t r = 0; r < t.size(); ++r)
    top = std::max({top, t.integer(r, links_csv::rank_a), t.integer(r, links_csv::rank_b)});
  if (top > 1023) throw UsageError(t.path() + ": rank " + std::to_string(top) + " is over 1023, bench_links' most");
  LinkGrid g;
  g.n = int(top + 1);
  const std::size_t cells = std::size_t(g.n) * std::size_t(g.n);
  g.latency_us.assign(cells, std::numeric_limits<double>::quiet_NaN());
  g.gbps = g.latency_us;
  g.slow.assign(cells, false);
  g.hosts.assign(std::size_t(g.n), "");
  for (std::size_t r = 0; r < t.size(); ++r) {
    const std::int64_t a = t.integer(r, links_csv::rank_a), b = t.integer(r, links_csv::rank_b);
    if (a < 0 || b < 0 || a == b)
      throw UsageError(t.path() + ":" + std::to_string(t.line(r)) + ": ranks " + std::to_string(a) + " and " +
                       std::to_string(b) + " are not a pair of two ranks >= 0");
    const std::size_t ab = std::size_t(a) * g.n + std::size_t(b), ba = std::size_t(b) * g.n + std::size_t(a);
    if (!std::isnan(g.latency_us[ab]))
      throw UsageError(t.path() + ":" + std::to_string(t.line(r)) + ": the pair " + std::to_string(a) + "-" +
                       std::to_string(b) + " a second time");
    g.latency_us[ab] = g.latency_us[ba] = t.number(r, links_csv::latency_us);
    g.gbps[ab] = g.gbps[ba] = t.number(r, links_csv::gbps);
    g.slow[ab] = g.slow[ba] = !t.empty(r, links_csv::finding);
    if (t.has_column(links_csv::host_a)) g.hosts[std::size_t(a)] = t.text(r, links_csv::host_a);
    if (t.has_column(links_csv::host_b)) g.hosts[std::size_t(b)] = t.text(r, links_csv::host_b);
  }
  return g;
}

namespace {

std::vector<ColumnSpec> link_columns() {
  return {{links_csv::rank_a}, {links_csv::rank_b}, {links_csv::latency_us}, {links_csv::gbps},
          {links_csv::finding}, {links_csv::host_a, false}, {links_csv::host_b, false}};
}

// One panel: a box per pair coloured by `values` (dark is bad: high latency, low bandwidth), the slow pairs
// outlined, the values written in the cells when they fit.
void panel(PlotScript& sc, const LinkGrid& g, const std::vector<double>& values, const std::string& title,
           bool high_is_bad, const ImageSize& size) {
  sc.cmd("set title " + quote(title) + title_font(size, 0));
  sc.cmd("set xrange [-0.5:" + gnuplot_number(g.n - 0.5) + "]");
  sc.cmd("set yrange [" + gnuplot_number(g.n - 0.5) + ":-0.5]");  // rank 0 at the top, as the printed matrix
  sc.cmd(high_is_bad ? "set palette defined (0 '#fff5eb', 1 '#fd8d3c', 2 '#7f2704')"
                     : "set palette defined (0 '#7f2704', 1 '#fd8d3c', 2 '#fff5eb')");
  sc.cmd("unset label");
  std::vector<std::vector<double>> cells, outlines;
  for (int a = 0; a < g.n; ++a)
    for (int b = 0; b < g.n; ++b) {
      const double v = values[std::size_t(a) * g.n + std::size_t(b)];
      if (std::isnan(v)) continue;
      cells.push_back({double(b), double(a), b - 0.5, b + 0.5, a - 0.5, a + 0.5, v});
      if (g.slow[std::size_t(a) * g.n + std::size_t(b)])
        outlines.push_back({double(b), double(a), b - 0.45, b + 0.45, a - 0.45, a + 0.45});
      if (g.n <= 16) {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", v);
        sc.cmd("set label " + quote(text) + " at " + std::to_string(b) + "," + std::to_string(a) + " center front" +
               title_font(size, g.n > 8 ? -3 : -1));
      }
    }
  if (cells.empty()) throw UsageError("no pairs with a value to draw in the panel '" + title + "'");
  std::string plot = "plot '-' using 1:2:3:4:5:6:7 with boxxyerror fs solid 1.0 noborder lc palette notitle";
  if (!outlines.empty())
    plot += ", '-' using 1:2:3:4:5:6 with boxxyerror fs empty border rgb 'black' lw 3 lc rgb 'black' title 'slow'";
  sc.cmd(plot);
  sc.data(std::move(cells));
  if (!outlines.empty()) sc.data(std::move(outlines));
}

}  // namespace

void plot_links(const FigureOptions& o) {
  image_format(o.render.output);
  const CsvTable t = CsvTable::read(o.input, link_columns());
  const LinkGrid g = link_grid(t);
  PlotScript sc;
  sc.cmd("set encoding utf8");
  sc.cmd("set multiplot layout 1,2 title " +
         heading(o, "Every pair of " + std::to_string(g.n) + " ranks (bench_links)", "", {}) +
         title_font(o.render.size));
  sc.cmd("set size ratio -1");
  sc.cmd("set xlabel 'rank'");
  sc.cmd("set ylabel 'rank'");
  sc.cmd("set xtics 1 out nomirror");
  sc.cmd("set ytics 1 out nomirror");
  sc.cmd("set key below");
  panel(sc, g, g.latency_us, "latency (us)", true, o.render.size);
  panel(sc, g, g.gbps, "bandwidth (GB/s, each way)", false, o.render.size);
  sc.cmd("unset multiplot");
  finish(sc, o);
}

}  // namespace parbench::plots
