// nccl-tests' text output (header, table header, rows, footer) and its JSON file (-J, version 3), on rank 0.
// A script that finds the 'out-of-place' line, skips the two header lines to the rows and stops at 'Out of
// bounds values' reads our rows as it reads nccl-tests' (out-of-place busbw is field -6 of a row without -I).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/types.h"
#include "options.h"
#include "timing.h"

namespace parbench {

// One rank's line of "# Using devices".
struct RankInfo {
  int rank = 0, group = 0, pid = 0, device = 0;
  std::string host, bus, name;  // bus: a PCI address on cuda, the device kind otherwise
};

// One measured half (out-of-place or in-place) of a row.
struct HalfResult {
  bool ran = false;
  Timing t;            // reduced over ranks (-a)
  double algbw = 0, busbw = 0;
  std::int64_t wrong = -1;  // -1: not checked (-c 0)
};

struct RowResult {
  std::uint64_t bytes = 0, count = 0;
  DType dtype = DType::f32;
  std::string redop;  // "none" where it does not apply
  int root = -1;
  HalfResult half[2];  // out-of-place, in-place
  std::string timestamp;  // -S
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

  // JSON (version 3): the run's configuration, devices, every row, totals.
  void add_json_row(const RowResult& r, const std::string& impl);
  void write_json(const std::string& path, const std::vector<RankInfo>& ranks, std::int64_t wrong,
                  double avg_busbw) const;

 private:
  std::string half_columns(const HalfResult& h) const;
  std::string program_;
  const BenchOptions& o_;
  std::uint64_t min_bytes_, max_bytes_;
  std::vector<std::string> argv_;
  std::string start_time_;
  nlohmann::json results_ = nlohmann::json::array();
};

// The local time now, "YYYY-MM-DDTHH:MM:SS" (one field, so a row still splits on blanks).
std::string time_of_day();

}  // namespace parbench
