// nccl-tests' text output (header, table header, rows, footer) and its JSON file (-J), on rank 0, in the widths
// and number forms of nccl-tests 2.19. A script that finds the 'out-of-place' line, skips the two header lines to
// the rows and stops at 'Out of bounds values' reads our rows as it reads nccl-tests' (out-of-place busbw is
// field -6 of a row without -I and -S).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/table/types.h"
#include "json_stream.h"
#include "options.h"
#include "per_iter.h"
#include "timing.h"

namespace parbench {

// One measured half (out-of-place or in-place) of a row.
struct HalfResult {
  bool ran = false;
  Timing t;            // reduced over ranks (-a)
  double algbw = 0, busbw = 0;
  std::int64_t wrong = -1;  // -1: not checked (-c 0)
  PerIterResult per_iter;   // -I
  std::vector<double> rank_own;  // --outliers: every rank's own time (world rank 0's copy; empty elsewhere)
};

struct RowResult {
  std::uint64_t bytes = 0, count = 0;
  DType dtype = DType::f32;
  std::string redop;  // "none" where it does not apply
  int root = -1;
  HalfResult half[2];  // out-of-place, in-place
  std::string timestamp;  // -S: when the row was measured (time_of_day)
};

class NcclReport {
 public:
  NcclReport(std::string program, const BenchOptions& o, std::uint64_t min_bytes, std::uint64_t max_bytes,
             std::vector<std::string> argv);

  void print_header(const std::vector<RankInfo>& ranks, const std::vector<std::string>& notes) const;
  void print_table_header() const;
  void print_row(const RowResult& r) const;
  // A block's footer: out-of-bounds count and the mean busbw of its printed measurements.
  void print_block_footer(std::int64_t wrong, double avg_busbw) const;
  void print_end() const;

  // -J: the row appended to the file (created at the first row, with the run's configuration and `ranks`), the
  // totals after it; json_finish rewrites the totals with the end time.
  void json_row(const std::string& path, const RowResult& r, const std::string& impl,
                const std::vector<RankInfo>& ranks, std::int64_t wrong, double avg_busbw);
  void json_finish(std::int64_t wrong, double avg_busbw);
  std::uint64_t json_bytes_written() const { return json_.bytes_written(); }

 private:
  std::string half_columns(const HalfResult& h) const;
  std::string json_head(const std::vector<RankInfo>& ranks) const;
  std::string program_;
  const BenchOptions& o_;
  std::uint64_t min_bytes_, max_bytes_;
  std::vector<std::string> argv_;
  std::string start_time_;
  JsonListFile json_;
};

// The local time now as nccl-tests prints it, "YYYY-MM-DD HH:MM:SS" (two fields of a row).
std::string time_of_day();

// nccl-tests' number in `width` characters: two decimals while the integer part leaves room, then one, then none,
// then an exponent (one decimal from width 7, none below).
std::string float_str(double value, int width);

// nccl-tests' name of a type in the table and the JSON.
const char* nccl_type_name(DType t);
// -J's "env": the environment variables that shape a run (NCCL_*, CUDA_*, PARBENCH_*), "NAME=value" each.
nlohmann::ordered_json json_environment();
// A result's JSON element (nlohmann's ordered form, nccl-tests' key order), and the text after the results list.
nlohmann::ordered_json result_json(const RowResult& r, const std::string& impl, bool cputime, bool per_iter,
                                   std::int64_t actual_iterations);
std::string json_tail(std::int64_t wrong, double avg_busbw, const std::string& end_time);

}  // namespace parbench
