#include "plots/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/cli.h"
#include "app/output.h"
#include "core/csv_columns.h"
#include "app/sizes.h"

namespace parbench::plots {

namespace {

// The options of every figure but its input.
void add_output_options(CLI::App* sub, PlotCommand& c) {
  sub->add_option("-o,--output", c.figure.render.output, "image to write: .png (pngcairo) or .svg")->required();
  sub->add_option("--title", c.figure.title, "figure title (default: made from the data)");
  sub->add_option("--machine", c.figure.machine,
                  "where the data was measured, for the caption under the title, e.g. \"8x H100 SXM, 1 node\" "
                  "(the input's device column is added unless the text names it)");
  sub->add_option("--size", c.size, "image size in pixels, WIDTHxHEIGHT")->capture_default_str();
  sub->add_option("--gnuplot", c.figure.render.gnuplot, "gnuplot program (name in PATH or path)")
      ->capture_default_str();
  sub->add_option("--script", c.figure.render.script_copy,
                  "also write the gnuplot script (with its data) to this file, to adjust by hand");
}

void add_figure_options(CLI::App* sub, PlotCommand& c, const std::string& input_help) {
  sub->add_option("-i,--input", c.figure.input, input_help)->required();
  add_output_options(sub, c);
}

void add_collective_filters(CLI::App* sub, CollectiveFilter& f) {
  sub->add_option("--collective", f.collectives, "keep only these collectives (repeat or comma list)")
      ->delimiter(',');
  sub->add_option("--ranks", f.ranks, "keep only these rank counts")->delimiter(',');
  sub->add_option("--dtype", f.dtypes, "keep only these dtypes")->delimiter(',');
  sub->add_option("--impl", f.impls, "keep only these implementations")->delimiter(',');
}

void add_training_filters(CLI::App* sub, TrainingFilter& f) {
  sub->add_option("--scheme", f.schemes, "keep only these schemes (repeat or comma list)")->delimiter(',');
  sub->add_option("--model", f.models, "keep only these models")->delimiter(',');
  sub->add_option("--ranks", f.ranks, "keep only these rank counts")->delimiter(',');
}

// A figure's subcommand with the options every figure takes.
CLI::App* add_figure(CLI::App& app, PlotCommand& c, const std::string& name, const std::string& help,
                     const std::string& input_help) {
  CLI::App* sub = app.add_subcommand(name, help);
  add_figure_options(sub, c, input_help);
  return sub;
}

}  // namespace

void add_plot_options(CLI::App& app, PlotCommand& c) {
  app.require_subcommand(1);
  const std::string collectives_csv = "collectives CSV (bench_allreduce and friends)";
  const std::string training_csv = "training CSV (bench_train)";

  c.busbw = add_figure(app, c, "busbw", "bus bandwidth vs message size (log-log), one line per implementation",
                       collectives_csv);
  add_collective_filters(c.busbw, c.collective_filter);

  c.latency = add_figure(app, c, "latency", "time per operation vs message size for small messages", collectives_csv);
  add_collective_filters(c.latency, c.collective_filter);
  c.latency->add_option("--max-bytes", c.max_bytes, "largest message size shown (K, M, G suffixes)")
      ->capture_default_str();

  c.scaling = add_figure(app, c, "scaling",
                         "throughput vs rank count per scheme, with ideal and efficiency, and the share of "
                         "communication overlapped with computation when the CSV has an overlap column",
                         training_csv);
  add_training_filters(c.scaling, c.training_filter);
  c.scaling->add_option("--metric", c.metric, "throughput column")
      ->check(CLI::IsMember({csv::train::samples_per_s, csv::train::tokens_per_s}))
      ->capture_default_str();
  c.scaling
      ->add_option("--mode", c.mode,
                   "strong: job throughput vs ranks, ideal linear; weak: per-rank throughput, ideal flat")
      ->check(CLI::IsMember({"strong", "weak"}))
      ->capture_default_str();

  c.bubble = add_figure(app, c, "bubble", "measured and theoretical pipeline bubble vs microbatches", training_csv);
  add_training_filters(c.bubble, c.training_filter);

  c.memory = add_figure(app, c, "memory", "per-rank peak memory by category (stacked) per scheme", training_csv);
  add_training_filters(c.memory, c.training_filter);

  c.links = add_figure(app, c, "links", "heat maps of every pair's latency and bandwidth, the slow pairs outlined",
                      "bench_links CSV");

  c.compare_runs = app.add_subcommand(
      "compare", "two collective benchmark runs as parbench-compare judges them: both runs' times, the time ratio "
                 "with its interval, the marked rows circled");
  c.compare_runs->add_option("old", c.compare.old_path, "the baseline run (as parbench-compare reads it)")->required();
  c.compare_runs->add_option("new", c.compare.new_path, "the run to judge")->required();
  add_output_options(c.compare_runs, c);
  c.compare_runs->add_option("--threshold", c.threshold_pct, "percent: a change smaller than this is never marked")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  c.compare_runs->add_option("--confidence", c.confidence_pct, "percent: the interval's confidence")
      ->capture_default_str()
      ->check(CLI::Range(50.0, 99.9));
  c.compare_runs->add_option("--collective", c.compare.filter.collectives, "keep only these collectives")->delimiter(',');
  c.compare_runs->add_option("--impl", c.compare.filter.impls, "keep only these implementations")->delimiter(',');
  c.compare_runs->add_option("--dtype", c.compare.filter.dtypes, "keep only these dtypes")->delimiter(',');

  c.timeline = add_figure(app, c, "timeline", "Gantt chart of one pipeline step from a Chrome trace",
                          "Chrome trace JSON (bench_train --trace)");
  c.timeline->add_option("--step", c.step, "step to show, 0-based (default: the last one in the trace)");
  c.timeline->add_flag("--tracks", c.by_track,
                       "one row per track (a rank's stream or thread, e.g. compute stream and comm stream) "
                       "instead of one per rank");

  c.merge = app.add_subcommand(
      "merge-traces", "one Chrome trace from the per-rank traces of an mpirun job (FILE, FILE.rank1.json, ...)");
  c.merge->add_option("-o,--output", c.merged, "merged trace (JSON) to write")->required();
  c.merge->add_option("traces", c.traces, "per-rank trace files")->required();
}

std::string unknown_figure(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2 || argv[1][0] == '-') return "";
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == argv[1]) return "";
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return "unknown figure '" + std::string(argv[1]) + "'; accepted: " + names;
}

void check_values(PlotCommand& c) {
  if (*c.merge) return;
  c.figure.render.size = parse_image_size(c.size);
  (void)image_format(c.figure.render.output);
  if (*c.latency) c.max_bytes_value = parse_size(c.max_bytes);
  c.compare.settings.threshold = c.threshold_pct / 100, c.compare.settings.confidence = c.confidence_pct / 100;
}

int plot_main(int argc, char** argv) {
  CLI::App app{"parbench-plot: draws parbench results (CSV) and traces (JSON) as PNG or SVG with gnuplot",
               "parbench-plot"};
  PlotCommand c;
  add_plot_options(app, c);
  if (const std::string unknown = unknown_figure(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "parbench-plot: error: %s\n", unknown.c_str());
    return 2;
  }
  return run_program(app, argc, argv, [&]() {
    check_values(c);
    // Every output path checked before any input is read.
    if (*c.merge) check_output_path("merge-traces -o/--output", c.merged);
    else check_output_paths({{"-o/--output", c.figure.render.output}, {"--script", c.figure.render.script_copy}});
    if (*c.busbw) plot_busbw(c.figure, c.collective_filter);
    if (*c.latency) plot_latency(c.figure, c.collective_filter, c.max_bytes_value);
    if (*c.scaling)
      plot_scaling(c.figure, c.training_filter, c.metric, c.mode == "weak" ? ScalingMode::weak : ScalingMode::strong);
    if (*c.bubble) plot_bubble(c.figure, c.training_filter);
    if (*c.memory) plot_memory(c.figure, c.training_filter);
    if (*c.timeline) plot_timeline(c.figure, c.step, c.by_track);
    if (*c.links) plot_links(c.figure);
    if (*c.compare_runs) plot_compare(c.figure, c.compare);
    if (*c.merge) merge_traces(c.traces, c.merged);
    return 0;
  });
}

}  // namespace parbench::plots
