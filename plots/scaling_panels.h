// The lower rows of the scaling figure (plots/training.cpp draws the throughput row above them): scaling
// efficiency, and the communication overlap when the training CSV reports one.
#pragma once
#include <string>
#include <vector>

#include "plots/figures.h"

namespace parbench::plots {

// Where a row sits in the multiplot (fractions of the image; a column of its own when the series are split over
// several) and whether it is the bottom one, which carries the x axis labels.
struct PanelBox {
  double origin_x = 0, width = 1;
  double origin_y = 0, height = 0;
  bool bottom = true;
};

// "%.10g": numbers in gnuplot commands.
std::string gnuplot_number(double v);

// True when some series has an overlap value at some rank count: the figure then gets the overlap row.
bool any_overlap(const std::vector<ScalingSeries>& series);

// Efficiency per scheme against the ideal 100%; emax: the largest efficiency (percent) shown.
void efficiency_panel(PlotScript& sc, const std::vector<ScalingSeries>& series, double emax, const PanelBox& box);

// Percent of the communication stream's time that ran under computation, per scheme; rank counts without a
// value are left out of their line.
void overlap_panel(PlotScript& sc, const std::vector<ScalingSeries>& series, const PanelBox& box);

// The overlap row's points of one series: {ranks, percent}, rank counts without a value left out.
std::vector<std::vector<double>> overlap_points(const ScalingSeries& s);

}  // namespace parbench::plots
