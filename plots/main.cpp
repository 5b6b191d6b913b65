// parbench-plot: figures from parbench's CSV results and Chrome traces, one subcommand per figure (plots/cli.*).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "app/cli.h"
#include "app/output.h"
#include "plots/cli.h"

int main(int argc, char** argv) {
  using namespace parbench::plots;
  CLI::App app{"parbench-plot: draws parbench results (CSV) and traces (JSON) as PNG or SVG with gnuplot",
               "parbench-plot"};
  PlotCommand c;
  add_plot_options(app, c);
  if (const std::string unknown = unknown_figure(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "parbench-plot: error: %s\n", unknown.c_str());
    return 2;
  }
  return parbench::run_program(app, argc, argv, [&]() {
    check_values(c);
    // Every output path checked before any input is read.
    if (*c.merge) parbench::check_output_path("merge-traces -o/--output", c.merged);
    else parbench::check_output_paths({{"-o/--output", c.figure.render.output}, {"--script", c.figure.render.script_copy}});
    if (*c.busbw) plot_busbw(c.figure, c.collective_filter);
    if (*c.latency) plot_latency(c.figure, c.collective_filter, c.max_bytes_value);
    if (*c.scaling)
      plot_scaling(c.figure, c.training_filter, c.metric, c.mode == "weak" ? ScalingMode::weak : ScalingMode::strong);
    if (*c.bubble) plot_bubble(c.figure, c.training_filter);
    if (*c.memory) plot_memory(c.figure, c.training_filter);
    if (*c.timeline) plot_timeline(c.figure, c.step);
    if (*c.merge) merge_traces(c.traces, c.merged);
    return 0;
  });
}
