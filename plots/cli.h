// parbench-plot's command line: one subcommand per figure, their options, and the checks that read no file.
// main.cpp runs them before anything else; tests/fuzz/fuzz_plot_cli.cpp parses argument vectors through them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plots/figures.h"

namespace CLI {
class App;
}

namespace parbench::plots {

struct PlotCommand {
  FigureOptions figure;
  std::string size = "1200x800";
  CollectiveFilter collective_filter;
  TrainingFilter training_filter;
  std::string max_bytes = "64K";  // latency
  std::string metric = csv::train::samples_per_s, mode = "strong";  // scaling
  int step = -1;         // timeline
  bool by_track = false;  // timeline: a row per track
  CompareFigure compare;            // compare: the runs and the settings
  double threshold_pct = 10, confidence_pct = 95;
  std::vector<std::string> traces;  // merge-traces
  std::string merged;
  // The subcommands, set by add_plot_options; after parsing, the one given is true.
  CLI::App *busbw = nullptr, *latency = nullptr, *scaling = nullptr, *bubble = nullptr, *memory = nullptr,
           *timeline = nullptr, *links = nullptr, *compare_runs = nullptr, *merge = nullptr;
  std::uint64_t max_bytes_value = 0;  // --max-bytes, set by check_values
};

void add_plot_options(CLI::App& app, PlotCommand& c);
// When argv[1] is neither an option nor a figure: "unknown figure 'X'; accepted: busbw, ..." (CLI11 alone says
// only that a subcommand is required). Empty otherwise.
std::string unknown_figure(const CLI::App& app, int argc, const char* const* argv);
// After parsing: the values that need no file (--size, --max-bytes, the image's extension); UsageError naming the
// value and its accepted form.
void check_values(PlotCommand& c);

// The whole program: its options, the checks above, then the figure asked for; the exit code (app/cli.h's).
int plot_main(int argc, char** argv);

}  // namespace parbench::plots
