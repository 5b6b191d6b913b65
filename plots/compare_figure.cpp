// compare: two runs of a collective benchmark side by side, as parbench-compare judges them: above, each group's
// time per operation against size in both runs (old dashed, new solid); below, the time ratio new / old with its
// interval, the threshold's band, and the rows marked slower or faster circled (the new run's point above).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "core/stats.h"
#include "plots/figures.h"
#include "plots/scaling_panels.h"  // gnuplot_number
#include "plots/training_common.h"

namespace parbench::plots {

std::vector<CompareGroup> compare_groups(const compare::Comparison& c, const CollectiveFilter& filter) {
  auto keep = [](const std::vector<std::string>& allowed, const std::string& v) {
    return allowed.empty() || std::find(allowed.begin(), allowed.end(), v) != allowed.end();
  };
  std::vector<CompareGroup> out;  // in the order of their first rows (the comparison's: out of place first)
  std::map<std::string, std::size_t> index;
  for (const compare::RowComparison& r : c.rows) {
    const compare::RowKey& k = r.key;
    if (!keep(filter.collectives, k.collective) || !keep(filter.impls, k.impl) || !keep(filter.dtypes, k.dtype))
      continue;
    std::string label = k.collective + (k.impl.empty() ? "" : " " + k.impl) + " " + k.dtype;
    if (k.op != "none" && !k.op.empty()) label += " " + k.op;
    if (k.root >= 0) label += " root " + std::to_string(k.root);
    label += k.inplace ? " in place" : " out of place";
    const auto [at, added] = index.emplace(label, out.size());
    if (added) out.push_back({label, int(out.size()), {}});
    CompareGroup& g = out[at->second];
    g.points.push_back({double(k.bytes), median(r.old_row->time_us), median(r.new_row->time_us), r.ratio.value,
                        r.ratio.lo.value_or(r.ratio.value), r.ratio.hi.value_or(r.ratio.value), r.mark});
  }
  for (CompareGroup& g : out)
    std::sort(g.points.begin(), g.points.end(),
              [](const ComparePoint& a, const ComparePoint& b) { return a.bytes < b.bytes; });
  if (out.empty()) throw UsageError("no rows of the two runs match each other and the filters");
  if (out.size() > std::size_t(kMaxSeriesPerPanel))
    throw UsageError(std::to_string(out.size()) + " groups of rows (" + out[0].label + ", " + out[1].label +
                     ", ...) are more than the " + std::to_string(kMaxSeriesPerPanel) +
                     " a figure shows; keep fewer with --collective, --impl or --dtype");
  return out;
}

namespace {

// The points of the marked rows in one panel: x and the panel's y.
std::vector<std::vector<double>> marked(const std::vector<CompareGroup>& groups, compare::Mark m, bool ratio_panel) {
  std::vector<std::vector<double>> rows;
  for (const CompareGroup& g : groups)
    for (const ComparePoint& p : g.points)
      if (p.mark == m) {
        rows.push_back({p.bytes, ratio_panel ? p.ratio : p.new_us});
      }
  return rows;
}

// Circles around the marked rows' points, slower red and faster green, after the panel's own series.
void add_marks(std::string& plot, std::vector<std::vector<std::vector<double>>>& blocks,
               const std::vector<CompareGroup>& groups, bool ratio_panel) {
  const std::pair<compare::Mark, const char*> marks[] = {{compare::Mark::slower, "'#d62728' title 'marked slower'"},
                                                         {compare::Mark::faster, "'#2ca02c' title 'marked faster'"}};
  for (const auto& [m, style] : marks) {
    auto rows = marked(groups, m, ratio_panel);
    if (rows.empty()) continue;
    plot += ", '-' using 1:2 with points pt 6 ps 3 lw 2 lc rgb " + std::string(style);
    blocks.push_back(std::move(rows));
  }
}

void size_axis(PlotScript& sc, const std::vector<CompareGroup>& groups) {
  double lo = 1e300, hi = 0;
  for (const CompareGroup& g : groups)
    for (const ComparePoint& p : g.points) lo = std::min(lo, p.bytes), hi = std::max(hi, p.bytes);
  sc.cmd("set logscale x 2");
  sc.cmd("set xrange [" + gnuplot_number(lo / 1.5) + ":" + gnuplot_number(hi * 1.5) + "]");
  sc.cmd(size_tics_command("x", lo, hi, 12));
  sc.cmd("set xlabel 'message size (bytes)'");
}

void time_panel(PlotScript& sc, const std::vector<CompareGroup>& groups, const ImageSize& size) {
  sc.cmd("set title 'time per operation (us): old dashed, new solid'" + title_font(size, 0));
  size_axis(sc, groups);
  sc.cmd("set logscale y 10");
  sc.cmd("set ylabel 'time (us)'");
  std::string plot = "plot";
  std::vector<std::vector<std::vector<double>>> blocks;
  for (const CompareGroup& g : groups) {
    const std::string color = " lc rgb '" + series_color(g.color) + "'";
    std::vector<std::vector<double>> old_rows, new_rows;
    for (const ComparePoint& p : g.points) old_rows.push_back({p.bytes, p.old_us}), new_rows.push_back({p.bytes, p.new_us});
    plot += std::string(blocks.empty() ? " " : ", ") + "'-' using 1:2 with linespoints dt 2 pt " +
            std::to_string(series_point(g.color, true)) + color + " notitle";
    plot += ", '-' using 1:2 with linespoints lw 2 pt " + std::to_string(series_point(g.color)) + color +
            " title " + quote(g.label);
    blocks.push_back(std::move(old_rows)), blocks.push_back(std::move(new_rows));
  }
  add_marks(plot, blocks, groups, false);
  sc.cmd(plot);
  for (auto& b : blocks) sc.data(std::move(b));
  sc.cmd("unset logscale y");
}

void ratio_panel(PlotScript& sc, const std::vector<CompareGroup>& groups, double threshold, const ImageSize& size) {
  sc.cmd("set title " + quote("time new / old, with its interval; the band: within " +
                              gnuplot_number(threshold * 100) + "% either way") +
         title_font(size, 0));
  size_axis(sc, groups);
  sc.cmd("set ylabel 'ratio'");
  double lo = 1 / (1 + threshold), hi = 1 + threshold;
  for (const CompareGroup& g : groups)
    for (const ComparePoint& p : g.points) lo = std::min(lo, p.lo), hi = std::max(hi, p.hi);
  const bool wide = hi / lo > 3;  // ratios far apart: a log axis keeps the band and the small ones readable
  if (wide) sc.cmd("set logscale y 2");
  sc.cmd("set yrange [" + gnuplot_number(lo * 0.95) + ":" + gnuplot_number(hi * 1.05) + "]");
  sc.cmd("set object 1 rect from graph 0, first " + gnuplot_number(1 / (1 + threshold)) + " to graph 1, first " +
         gnuplot_number(1 + threshold) + " behind fc rgb '#eeeeee' fs solid noborder");
  std::string plot = "plot 1 with lines lc rgb 'black' dt 3 notitle";
  std::vector<std::vector<std::vector<double>>> blocks;
  for (const CompareGroup& g : groups) {
    std::vector<std::vector<double>> rows;
    for (const ComparePoint& p : g.points) rows.push_back({p.bytes, p.ratio, p.lo, p.hi});
    plot += ", '-' using 1:2:3:4 with yerrorlines pt " + std::to_string(series_point(g.color)) + " lc rgb '" +
            series_color(g.color) + "' title " + quote(g.label);
    blocks.push_back(std::move(rows));
  }
  add_marks(plot, blocks, groups, true);
  sc.cmd(plot);
  for (auto& b : blocks) sc.data(std::move(b));
  sc.cmd("unset object 1");
  if (wide) sc.cmd("unset logscale y");
}

}  // namespace

void plot_compare(const FigureOptions& o, const CompareFigure& f) {
  image_format(o.render.output);
  const compare::Run old_run = compare::read_run(f.old_path), new_run = compare::read_run(f.new_path);
  const compare::Comparison c = compare::compare_runs(old_run, new_run, f.settings);
  const std::vector<CompareGroup> groups = compare_groups(c, f.filter);
  int slower = 0, faster = 0;
  for (const CompareGroup& g : groups)
    for (const ComparePoint& p : g.points) slower += p.mark == compare::Mark::slower, faster += p.mark == compare::Mark::faster;
  PlotScript sc;
  sc.cmd("set encoding utf8");
  const auto name = [](const std::string& path) { return std::filesystem::path(path).filename().string(); };
  const std::string what = name(new_run.path) + " against " + name(old_run.path) + ": " + std::to_string(slower) + " slower, " +
                           std::to_string(faster) + " faster (" + gnuplot_number(f.settings.confidence * 100) +
                           "% interval beyond " + gnuplot_number(f.settings.threshold * 100) + "%)";
  sc.cmd("set multiplot layout 2,1 title " + heading(o, what, "", {}) + title_font(o.render.size));
  sc.cmd("set key outside right top");
  sc.cmd("set grid");
  time_panel(sc, groups, o.render.size);
  ratio_panel(sc, groups, f.settings.threshold, o.render.size);
  sc.cmd("unset multiplot");
  finish(sc, o);
}

}  // namespace parbench::plots
