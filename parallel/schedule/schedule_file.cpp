// Schedules as data: a CSV of compute actions per stage, read with fast-cpp-csv-parser, given its sends and
// receives, and checked like a generated schedule.
#define CSV_IO_NO_THREAD
#include <algorithm>
#include <fstream>
#include <limits>  // fccp's integer parsing uses numeric_limits without including it
#include <string>

#include "base/error.h"
#include "core/csv_columns.h"
#include "parallel/schedule/schedule.h"
#include "parallel/schedule/play.h"

// fccp's error types copy the file name with strncpy into a fixed buffer, which g++ flags where the reader's
// code is inlined into this file's functions: off for the whole file.
#if !defined(__clang__)  // a g++ warning only (clang builds the fuzz targets)
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#endif
#include <libfccp/csv.h>

namespace parbench {

namespace {

constexpr const char* kAcceptedOps = "F, B, BI or W";
constexpr int kMaxDimension = 1 << 16;  // stages, microbatches or chunks beyond this are a typo, not a schedule

PipeOp compute_op(const std::string& name, const std::string& where) {
  for (PipeOp op : {PipeOp::forward, PipeOp::backward, PipeOp::backward_input, PipeOp::backward_weight})
    if (pipe_op_name(op) == name) return op;
  throw UsageError(where + ": op '" + name + "' is not a compute action; accepted: " + kAcceptedOps +
                   " (sends and receives are added from the compute order)");
}

void check_range(int value, const char* column, const std::string& where) {
  if (value < 0 || value >= kMaxDimension)
    throw UsageError(where + ": " + column + " " + std::to_string(value) + " is outside 0.." +
                     std::to_string(kMaxDimension - 1));
}

// The rows, in file order, with their line numbers.
struct Row {
  int stage, microbatch, chunk;
  PipeOp op;
};

std::vector<Row> read_rows(const std::string& path) {
  if (!std::ifstream(path))
    throw UsageError("--schedule: cannot read schedule file '" + path + "'; expected a readable CSV with the header " +
                     csv::header_line(csv::schedule::header) + ", or one of the schedule names");
  std::vector<Row> rows;
  try {
    io::CSVReader<4, io::trim_chars<' ', '\t'>> in(path);
    namespace col = csv::schedule;
    in.read_header(io::ignore_extra_column, col::stage, col::op, col::microbatch, col::chunk);
    int stage = 0, microbatch = 0, chunk = 0;
    std::string op;
    while (in.read_row(stage, op, microbatch, chunk)) {
      const std::string where = path + ":" + std::to_string(in.get_file_line());
      check_range(stage, col::stage, where), check_range(microbatch, col::microbatch, where);
      check_range(chunk, col::chunk, where);
      rows.push_back({stage, microbatch, chunk, compute_op(op, where)});
    }
  } catch (const io::error::base& e) {
    throw UsageError("schedule file " + path + ": " + e.what() + " (expected the header " +
                     csv::header_line(csv::schedule::header) + ")");
  }
  if (rows.empty()) throw UsageError("schedule file " + path + " has no actions (only a header)");
  return rows;
}

}  // namespace

PipeSchedule read_schedule_csv(const std::string& path) {
  const std::vector<Row> rows = read_rows(path);
  PipeSchedule s;
  s.name = path;
  for (const Row& r : rows) {
    s.stages = std::max(s.stages, r.stage + 1);
    s.microbatches = std::max(s.microbatches, r.microbatch + 1);
    s.chunks = std::max(s.chunks, r.chunk + 1);
    s.split_backward = s.split_backward || r.op == PipeOp::backward_input || r.op == PipeOp::backward_weight;
  }
  s.actions.resize(std::size_t(s.stages));
  for (const Row& r : rows) s.actions[std::size_t(r.stage)].push_back({r.op, r.microbatch, r.chunk});
  add_communication(s);
  std::vector<std::string> problems = check_schedule(s);
  if (!problems.empty()) {
    std::string text;
    for (std::size_t i = 0; i < std::min<std::size_t>(problems.size(), 5); ++i) text += "\n  " + problems[i];
    throw UsageError("schedule file " + path + " is not a valid schedule (" + std::to_string(problems.size()) +
                     " problems):" + text);
  }
  return s;
}

void write_schedule_csv(const PipeSchedule& s, const std::string& path) {
  std::ofstream out(path);
  out << csv::header_line(csv::schedule::header) << '\n';
  for (std::size_t st = 0; st < s.actions.size(); ++st)
    for (const PipeAction& a : s.actions[st])
      if (is_compute(a.op)) out << st << ',' << pipe_op_name(a.op) << ',' << a.microbatch << ',' << a.chunk << '\n';
  if (!out.flush()) throw Error("cannot write schedule file " + path);
}

}  // namespace parbench
