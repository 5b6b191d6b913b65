// parbench-plot: figures from parbench's CSV results and Chrome traces, one subcommand per figure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "app/cli.h"
#include "app/output.h"
#include "core/error.h"
#include "core/sizes.h"
#include "plots/figures.h"

namespace {

using parbench::plots::FigureOptions;

struct Common {
  FigureOptions figure;
  std::string size = "1200x800";
};

void add_figure_options(CLI::App* sub, Common& c, const std::string& input_help) {
  sub->add_option("-i,--input", c.figure.input, input_help)->required();
  sub->add_option("-o,--output", c.figure.render.output, "image to write: .png (pngcairo) or .svg")->required();
  sub->add_option("--title", c.figure.title, "figure title (default: made from the data)");
  sub->add_option("--size", c.size, "image size in pixels, WIDTHxHEIGHT")->capture_default_str();
  sub->add_option("--gnuplot", c.figure.render.gnuplot, "gnuplot program (name in PATH or path)")
      ->capture_default_str();
  sub->add_option("--script", c.figure.render.script_copy,
                  "also write the gnuplot script (with its data) to this file, to adjust by hand");
}

void add_collective_filters(CLI::App* sub, parbench::plots::CollectiveFilter& f) {
  sub->add_option("--collective", f.collectives, "keep only these collectives (repeat or comma list)")
      ->delimiter(',');
  sub->add_option("--ranks", f.ranks, "keep only these rank counts")->delimiter(',');
  sub->add_option("--dtype", f.dtypes, "keep only these dtypes")->delimiter(',');
  sub->add_option("--impl", f.impls, "keep only these implementations")->delimiter(',');
}

void add_training_filters(CLI::App* sub, parbench::plots::TrainingFilter& f) {
  sub->add_option("--scheme", f.schemes, "keep only these schemes (repeat or comma list)")->delimiter(',');
  sub->add_option("--model", f.models, "keep only these models")->delimiter(',');
  sub->add_option("--ranks", f.ranks, "keep only these rank counts")->delimiter(',');
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parbench::plots;
  CLI::App app{"parbench-plot: draws parbench results (CSV) and traces (JSON) as PNG or SVG with gnuplot",
               "parbench-plot"};
  app.require_subcommand(1);
  Common c;
  const std::string collectives_csv = "collectives CSV (bench_allreduce and friends)";
  const std::string training_csv = "training CSV (bench_train)";

  CollectiveFilter cfilter;
  auto* busbw = app.add_subcommand("busbw", "bus bandwidth vs message size (log-log), one line per implementation");
  add_figure_options(busbw, c, collectives_csv);
  add_collective_filters(busbw, cfilter);

  auto* latency = app.add_subcommand("latency", "time per operation vs message size for small messages");
  add_figure_options(latency, c, collectives_csv);
  add_collective_filters(latency, cfilter);
  std::string max_bytes = "64K";
  latency->add_option("--max-bytes", max_bytes, "largest message size shown (K, M, G suffixes)")
      ->capture_default_str();

  TrainingFilter tfilter;
  auto* scaling = app.add_subcommand("scaling", "throughput vs rank count per scheme, with ideal and efficiency");
  add_figure_options(scaling, c, training_csv);
  add_training_filters(scaling, tfilter);
  std::string metric = "samples_per_s";
  scaling->add_option("--metric", metric, "throughput column")
      ->check(CLI::IsMember({"samples_per_s", "tokens_per_s"}))
      ->capture_default_str();
  std::string mode = "strong";
  scaling->add_option("--mode", mode,
                      "strong: job throughput vs ranks, ideal linear; weak: per-rank throughput, ideal flat")
      ->check(CLI::IsMember({"strong", "weak"}))
      ->capture_default_str();

  auto* bubble = app.add_subcommand("bubble", "measured and theoretical pipeline bubble vs microbatches");
  add_figure_options(bubble, c, training_csv);
  add_training_filters(bubble, tfilter);

  auto* memory = app.add_subcommand("memory", "per-rank peak memory by category (stacked) per scheme");
  add_figure_options(memory, c, training_csv);
  add_training_filters(memory, tfilter);

  auto* timeline = app.add_subcommand("timeline", "Gantt chart of one pipeline step from a Chrome trace");
  add_figure_options(timeline, c, "Chrome trace JSON (bench_train --trace)");
  int step = -1;
  timeline->add_option("--step", step, "step to show, 0-based (default: the last one in the trace)");

  auto* merge = app.add_subcommand(
      "merge-traces", "one Chrome trace from the per-rank traces of an mpirun job (FILE, FILE.rank1.json, ...)");
  std::vector<std::string> traces;
  std::string merged;
  merge->add_option("-o,--output", merged, "merged trace (JSON) to write")->required();
  merge->add_option("traces", traces, "per-rank trace files")->required();

  // CLI11 says only "A subcommand is required" for an unknown one: name it and the accepted ones.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "parbench-plot: error: unknown figure '%s'; accepted: %s\n", argv[1], names.c_str());
      return 2;
    }
  }
  return parbench::run_program(app, argc, argv, [&]() {
    // Every output path checked before any input is read.
    if (*merge) parbench::check_output_path("merge-traces -o/--output", merged);
    else parbench::check_output_paths({{"-o/--output", c.figure.render.output}, {"--script", c.figure.render.script_copy}});
    c.figure.render.size = parse_image_size(c.size);
    if (*busbw) plot_busbw(c.figure, cfilter);
    if (*latency) plot_latency(c.figure, cfilter, parbench::parse_size(max_bytes));
    if (*scaling) plot_scaling(c.figure, tfilter, metric, mode == "weak" ? ScalingMode::weak : ScalingMode::strong);
    if (*bubble) plot_bubble(c.figure, tfilter);
    if (*memory) plot_memory(c.figure, tfilter);
    if (*timeline) plot_timeline(c.figure, step);
    if (*merge) merge_traces(traces, merged);
    return 0;
  });
}
