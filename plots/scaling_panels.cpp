// The scaling figure's efficiency and overlap rows: same x axis and series colours as the throughput row.
#include "plots/scaling_panels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace parbench::plots {
namespace {

// The margins and x labels of a row: only the bottom row shows the ranks under its axis.
void place(PlotScript& sc, const PanelBox& box) {
  sc.cmd("set origin " + gnuplot_number(box.origin_x) + "," + gnuplot_number(box.origin_y));
  sc.cmd("set size " + gnuplot_number(box.width) + "," + gnuplot_number(box.height));
  sc.cmd("set tmargin 0.5");
  if (box.bottom) {
    sc.cmd("set bmargin 3.5");
    sc.cmd("set format x '%g'");
    sc.cmd("set xlabel 'ranks'");
  } else {
    sc.cmd("set bmargin 0.5");
    sc.cmd("set format x ''");
    sc.cmd("unset xlabel");
  }
  sc.cmd("unset key");
}

}  // namespace

std::string gnuplot_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

bool any_overlap(const std::vector<ScalingSeries>& series) {
  return std::any_of(series.begin(), series.end(), [](const ScalingSeries& s) {
    return std::any_of(s.overlap.begin(), s.overlap.end(), [](const auto& v) { return v.has_value(); });
  });
}

void efficiency_panel(PlotScript& sc, const std::vector<ScalingSeries>& series, double emax, const PanelBox& box) {
  place(sc, box);
  sc.cmd("set ylabel 'scaling efficiency (%)'");
  sc.cmd("set yrange [0:" + gnuplot_number(std::ceil(emax * 1.1 / 10) * 10) + "]");
  sc.cmd("set ytics 25");
  std::string plot = "plot 100 with lines lw 1.5 dt 2 lc rgb 'black'";
  for (const auto& s : series)
    plot += ", '-' using 1:2 with linespoints lw 2 pt 7 ps 1.1 lc rgb '" + series_color(s.color) + "'";
  sc.cmd(plot);
  for (const auto& s : series) {
    std::vector<std::vector<double>> eff;
    for (std::size_t i = 0; i < s.ranks.size(); ++i) eff.push_back({s.ranks[i], s.efficiency[i]});
    sc.data(std::move(eff));
  }
}

std::vector<std::vector<double>> overlap_points(const ScalingSeries& s) {
  std::vector<std::vector<double>> points;
  for (std::size_t i = 0; i < s.ranks.size() && i < s.overlap.size(); ++i)
    if (s.overlap[i]) points.push_back({s.ranks[i], 100 * *s.overlap[i]});
  return points;
}

void overlap_panel(PlotScript& sc, const std::vector<ScalingSeries>& series, const PanelBox& box) {
  place(sc, box);
  sc.cmd("set ylabel 'comm. overlapped (%)'");
  sc.cmd("set yrange [0:105]");
  sc.cmd("set ytics 25");
  // A series without any value (predicted rows) draws nothing here rather than an empty data block.
  std::vector<std::vector<std::vector<double>>> blocks;
  std::string plot = "plot ";
  for (const auto& s : series) {
    std::vector<std::vector<double>> points = overlap_points(s);
    if (points.empty()) continue;
    plot += std::string(blocks.empty() ? "" : ", ") + "'-' using 1:2 with linespoints lw 2 pt 5 ps 1.1 lc rgb '" +
            series_color(s.color) + "'";
    blocks.push_back(std::move(points));
  }
  if (blocks.empty()) return;  // any_overlap() was false: the caller draws no such row
  sc.cmd(plot);
  for (auto& b : blocks) sc.data(std::move(b));
}

}  // namespace parbench::plots
