// The figures of parbench-plot: for each, a data step (pure, tested with exact values) and a drawing step
// that turns the data into a PlotScript and renders it.
#pragma once
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "core/csv_columns.h"
#include "plots/csv_table.h"
#include "plots/render.h"

namespace parbench::plots {

// What every subcommand takes: -i, -o, --title, --machine, --size, --gnuplot, --script.
struct FigureOptions {
  std::string input;
  std::string title;    // empty: a title made from the data
  std::string machine;  // where the data was measured, for the caption under the title
  RenderOptions render;
};

// Colours a panel may use: series_color's palette holds kPaletteSize distinct ones; a panel draws at most
// kMaxSeriesPerPanel series (distinct colours), more go to further panels.
inline constexpr int kPaletteSize = 8;
inline constexpr int kMaxSeriesPerPanel = 6;

// One line of a figure: its label, its colour index and its points (x ascending).
struct Series {
  std::string label;
  std::string legend;  // the label without the in-place half, which the line style shows (the key's entry)
  int color = 0;
  bool dashed = false;  // the in-place half of a collective, beside its out-of-place line of the same colour
  std::vector<std::pair<double, double>> points;
};

// One panel of a multiplot (one collective, for example). A figure with more series than a panel holds has
// `parts` panels per collective, each with its own share of the colours; a part can be empty (no rows of its
// series at that rank count), which leaves its place in the grid blank.
struct Panel {
  std::string title;
  std::vector<Series> series;
  int part = 0, parts = 1;
};

// ---- collectives: busbw and latency -------------------------------------------------------------

struct CollectiveFilter {
  std::vector<std::string> collectives, dtypes, impls;
  std::vector<std::int64_t> ranks;
};

// Rows of a collectives CSV after the filters, grouped into one panel per collective and one series per
// implementation and whatever else varies (device, ranks, nodes, dtype, op, in-place, root); repeated sizes of a
// series are averaged. y_column is busbw_gbps or time_us; rows with bytes > max_bytes or y <= 0 are dropped
// (log axes), counted in *dropped. The values common to all rows are returned in *common (for the title).
// The columns the busbw and latency figures read (y_column: busbw_gbps or time_us).
std::vector<ColumnSpec> collective_columns(const std::string& y_column);
// *devices: the device column's values among those rows (for the caption).
std::vector<Panel> collective_panels(const CsvTable& table, const CollectiveFilter& filter,
                                     const std::string& y_column, double max_bytes, std::string* common,
                                     std::size_t* dropped, std::vector<std::string>* devices = nullptr);

void plot_busbw(const FigureOptions& options, const CollectiveFilter& filter);
void plot_latency(const FigureOptions& options, const CollectiveFilter& filter, std::uint64_t max_bytes);

// ---- training: scaling, bubble, memory --------------------------------------------------------------

struct TrainingFilter {
  std::vector<std::string> schemes, models;
  std::vector<std::int64_t> ranks;
};

enum class ScalingMode { strong, weak };

struct ScalingSeries {
  std::string label;
  int color = 0;
  std::vector<double> ranks;       // ascending
  std::vector<double> throughput;  // metric (strong) or metric per rank (weak), mean of repeated rows
  std::vector<double> ideal;       // strong: T(n0) * n / n0; weak: T(n0) (per rank), n0 = smallest rank count
  std::vector<double> efficiency;  // percent: 100 * throughput / ideal
  // Per rank count: the mean overlap fraction (0..1) of the rows that report one; nullopt where none does
  // (predicted rows, CSVs written before the column existed).
  std::vector<std::optional<double>> overlap;
};

// Series measured at a single rank count show no scaling: they are left out and their labels put in *single.
// The overlap column is read when the table has it; a value outside 0..1 is a UsageError naming the cell.
std::vector<ScalingSeries> scaling_series(const CsvTable& table, const TrainingFilter& filter,
                                          const std::string& metric, ScalingMode mode, std::string* common,
                                          std::vector<std::string>* single = nullptr,
                                          std::vector<std::string>* devices = nullptr);
void plot_scaling(const FigureOptions& options, const TrainingFilter& filter, const std::string& metric,
                  ScalingMode mode);

// Measured and theoretical bubble (percent of the step) vs microbatches, one pair per schedule (and pp, ...).
struct BubbleSeries {
  std::string label;
  int color = 0;
  std::vector<std::pair<double, double>> measured, theory;
  std::vector<std::pair<double, double>> replayed;  // bubble_replayed, when the CSV has it
};
std::vector<ColumnSpec> bubble_columns();  // the columns the bubble figure reads
std::vector<BubbleSeries> bubble_series(const CsvTable& table, const TrainingFilter& filter, std::string* common,
                                        std::vector<std::string>* devices = nullptr);
void plot_bubble(const FigureOptions& options, const TrainingFilter& filter);

// One stacked bar per scheme (and whatever else varies): bytes per category, and the estimate when given.
inline const std::vector<std::string> kMemoryCategories(std::begin(csv::train::memory_bytes),
                                                         std::end(csv::train::memory_bytes));
struct MemoryBar {
  std::string label;
  std::vector<double> bytes;  // per kMemoryCategories
  std::optional<double> estimate;
};
std::vector<MemoryBar> memory_bars(const CsvTable& table, const TrainingFilter& filter, std::string* common,
                                   std::vector<std::string>* devices = nullptr);
void plot_memory(const FigureOptions& options, const TrainingFilter& filter);

// ---- links: bench_links' pairs ---------------------------------------------------------------------

// bench_links' CSV as matrices: n x n, row-major, symmetric, NaN on the diagonal and for pairs the file lacks.
struct LinkGrid {
  int n = 0;
  std::vector<double> latency_us, gbps;
  std::vector<bool> slow;          // the pair's finding is not empty (a slow rank's pair, or the pair itself)
  std::vector<std::string> hosts;  // per rank, "" where the file does not say
};
// UsageError naming the file and line for a pair of a rank with itself, a negative rank or a pair given twice.
LinkGrid link_grid(const CsvTable& table);
void plot_links(const FigureOptions& options);

// ---- compare: two runs of a collective benchmark (parbench-compare's comparison) -------------------

// One matched row: its size, both runs' median times, the ratio new / old with its interval (the ratio itself at
// both ends where a side had too few samples) and parbench-compare's mark.
struct ComparePoint {
  double bytes = 0, old_us = 0, new_us = 0, ratio = 0, lo = 0, hi = 0;
  compare::Mark mark = compare::Mark::none;
};
// The rows that differ only in size ("allreduce ring f32 sum out of place"), ascending size.
struct CompareGroup {
  std::string label;
  int color = 0;
  std::vector<ComparePoint> points;
};
// UsageError when no row is left after the filters (collectives, impls, dtypes; ranks are not a key here) or when
// more groups are left than a figure shows (kMaxSeriesPerPanel), naming the options that keep fewer.
std::vector<CompareGroup> compare_groups(const compare::Comparison& c, const CollectiveFilter& filter);
struct CompareFigure {
  std::string old_path, new_path;
  compare::Settings settings;
  CollectiveFilter filter;
};
void plot_compare(const FigureOptions& options, const CompareFigure& figure);

// ---- timeline ------------------------------------------------------------------------------------

enum class SpanKind { forward, backward, weight_grad, communication, optimizer, other_compute, idle };
inline constexpr int kSpanKinds = 7;
const char* span_kind_name(SpanKind kind);

struct Span {
  int row = 0;  // index into Timeline::rows
  SpanKind kind = SpanKind::other_compute;
  double start_ms = 0, end_ms = 0;  // relative to the window start
  std::optional<std::int64_t> microbatch;
  std::optional<std::int64_t> chunk;  // model chunk (interleaved schedules)
};

struct Timeline {
  std::vector<std::string> rows;  // one per pid, ascending pid (per pid and tid with by_track: "rank 0: comm stream")
  std::vector<Span> spans;
  double span_ms = 0;  // window length
  int step = -1;       // chosen step (0-based) when the trace has "step" events, else -1
  int steps = 0;       // number of steps found
  bool implicit_idle = false;  // idle spans were derived from gaps between compute spans
  bool by_track = false;       // a row per track (a rank's stream or thread); communication drawn at full height
  std::vector<std::string> devices;  // otherData's "device" (or "devices") when the trace names it, for the caption
};

// Classifies one trace event: by name first (F/B/W + space or "mb", forward/backward/wgrad..., send/recv),
// then by category (communication, optimizer, idle); nullopt for unclassified compute events.
std::optional<SpanKind> classify_event(const std::string& name, const std::string& cat);

// Reads a Chrome trace (object with "traceEvents" or a bare array), keeps the "X" events of one step
// (step < 0: the last one; "step" events mark steps) or the whole trace when there are no step events. With
// `by_track`, one row per track (pid and tid, named by the thread_name metadata) instead of one per pid.
Timeline read_timeline(const std::string& path, int step, bool by_track = false);
void plot_timeline(const FigureOptions& options, int step, bool by_track = false);

// ---- shared drawing helpers -------------------------------------------------------------------------

// A distinct colour for index i (cycled every kPaletteSize), as "#rrggbb".
std::string series_color(int i);
// A point type for index i: filled, or its hollow twin (the in-place or theory line of the same series).
int series_point(int i, bool hollow = false);
// The distinct colour indices of a figure in panels of at most `limit`, as even as can be (7 -> 4 + 3), no
// panel holding two indices of one palette colour; ascending within and across parts.
std::vector<std::vector<int>> split_colors(const std::vector<int>& colors, int limit = kMaxSeriesPerPanel);
// The caption line under a figure's title: "measured on: MACHINE, device cpu" (the device as the input file
// names it, left out when MACHINE already says it); without --machine it says the machine was not named.
std::string machine_caption(const std::string& machine, const std::vector<std::string>& devices);
// "set xtics (...)" with power-of-two sizes labelled 8, 1K, 64M, 1G, at most max_ticks of them.
std::string size_tics_command(const std::string& axis, double min_bytes, double max_bytes, int max_ticks);
// Chooses B/KiB/MiB/GiB for a largest value: {divisor, unit name}.
std::pair<double, std::string> byte_unit(double max_bytes);

// One Chrome trace from the per-process traces of an mpirun job (bench_train --trace): events concatenated, each
// file's timestamps shifted onto the earliest file's time origin (steady clock: processes of one node). UsageError
// for a file that is not a parbench trace or when two files hold the same rank.
void merge_traces(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace parbench::plots
