// alltoallv's per-peer split (alltoallv_split.h): the environment's pattern, its parsers and the counts it gives.
#include "collectives/table/alltoallv_split.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "base/text.h"

namespace parbench {

namespace {

constexpr std::uint64_t kAlign = 16;  // every per-peer byte count is a multiple of it (nccl-tests' alignment)
constexpr char kSpreadVar[] = "NCCL_TESTS_ALLTOALLV_SPREAD";
constexpr char kFileVar[] = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";
constexpr char kScaleVar[] = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE";

std::uint64_t align_down(std::uint64_t bytes) { return bytes & ~(kAlign - 1); }

// The whole of `text` as a finite number; nullopt otherwise.
std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The bad-matrix message: what is wrong, where, and the accepted form.
[[noreturn]] void bad_matrix(std::string_view file, const std::string& what) {
  throw UsageError(std::string(kFileVar) + "=" + std::string(file) + ": " + what +
                   "; accepted: a whitespace-separated square matrix of byte counts (cell [i][j] = bytes rank i "
                   "sends to rank j), non-negative integers, each a multiple of 16");
}

// The rows of `text`: whitespace-separated cells, one row a line (blank lines skipped).
std::vector<std::vector<std::string>> matrix_cells(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string cell; cells >> cell;) row.push_back(cell);
    if (!row.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

std::uint64_t matrix_value(std::string_view file, const std::string& cell, std::size_t i, std::size_t j) {
  const std::string where = "row " + std::to_string(i) + " column " + std::to_string(j) + " is '" + cell + "'";
  std::uint64_t v = 0;
  const char* end = cell.data() + cell.size();
  const auto [p, ec] = std::from_chars(cell.data(), end, v);
  if (ec != std::errc() || p != end) bad_matrix(file, where + ", not a non-negative integer");
  if (v % kAlign != 0) bad_matrix(file, where + ", not a multiple of 16 bytes");
  return v;
}

std::uint64_t peer_bytes_at(const AlltoallvPattern& p, int from, int to, int n, std::uint64_t total) {
  if (p.from_matrix()) return p.matrix[std::size_t(from) * std::size_t(p.dim) + std::size_t(to)];
  if (n == 1) return align_down(total);
  const int distance = (to - from + n) % n;
  const double distances = double(n) * double(n - 1) / 2;  // 1 + 2 + ... + (n-1)
  const double uniform = double(total) / double(n), weighted = double(distance) * double(total) / distances;
  return align_down(std::uint64_t((1.0 - p.spread) * uniform + p.spread * weighted));
}

void check_ranks(const AlltoallvPattern& p, int n) {
  if (p.from_matrix() && n > p.dim)
    throw UsageError(std::string(kFileVar) + "=" + p.file + " is a " + std::to_string(p.dim) + "x" +
                     std::to_string(p.dim) + " matrix, too small for " + std::to_string(n) +
                     " ranks; accepted: at least ranks x ranks (the first ranks rows and columns are used)");
}

}  // namespace

std::string AlltoallvPattern::describe() const {
  if (!from_matrix()) return "distance-weighted, spread " + number_text(spread);
  return "matrix " + file + " (" + std::to_string(dim) + "x" + std::to_string(dim) + ") x " + number_text(scale);
}

double parse_alltoallv_spread(std::string_view text) {
  const std::optional<double> v = parse_number(text);
  if (!v || *v < 0 || *v > 1)
    throw UsageError(std::string(kSpreadVar) + "='" + std::string(text) +
                     "' is not a spread; accepted: a number from 0.0 (uniform) to 1.0 (fully distance-weighted)");
  return *v;
}

double parse_alltoallv_scale(std::string_view text) {
  const std::optional<double> v = parse_number(text);
  if (!v || *v < 0)
    throw UsageError(std::string(kScaleVar) + "='" + std::string(text) +
                     "' is not a scale; accepted: a number >= 0 that multiplies every cell of the matrix");
  return *v;
}

AlltoallvPattern parse_alltoallv_matrix(std::string_view text, std::string_view file, double scale) {
  const std::vector<std::vector<std::string>> rows = matrix_cells(text);
  if (rows.empty()) bad_matrix(file, "it is empty");
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].size() != rows.size())
      bad_matrix(file, "row " + std::to_string(i) + " has " + std::to_string(rows[i].size()) + " values where " +
                           std::to_string(rows.size()) + " rows need " + std::to_string(rows.size()) +
                           " (not square)");
  AlltoallvPattern p;
  p.dim = int(rows.size());
  p.file = std::string(file);
  p.scale = scale;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows.size(); ++j) {
      const long double scaled = (long double)matrix_value(file, rows[i][j], i, j) * scale;
      if (scaled >= 0x1p63L) bad_matrix(file, "row " + std::to_string(i) + " column " + std::to_string(j) +
                                                  " scaled by " + number_text(scale) + " overflows");
      p.matrix.push_back(align_down(std::uint64_t(scaled)));
    }
  return p;
}

AlltoallvPattern alltoallv_pattern_from_env() {
  const char* file = std::getenv(kFileVar);
  if (!file || !*file) {
    AlltoallvPattern p;
    if (const char* spread = std::getenv(kSpreadVar)) p.spread = parse_alltoallv_spread(spread);
    return p;
  }
  const char* scale_text = std::getenv(kScaleVar);
  const double scale = scale_text ? parse_alltoallv_scale(scale_text) : 1.0;
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  if (!in || !(text << in.rdbuf()))
    throw UsageError(std::string(kFileVar) + "=" + file +
                     " cannot be read; accepted: the path of a readable text file holding the bytes matrix");
  return parse_alltoallv_matrix(text.str(), file, scale);
}

const AlltoallvPattern& alltoallv_pattern() {
  static const AlltoallvPattern pattern = alltoallv_pattern_from_env();  // a throw leaves it to the next call
  return pattern;
}

std::uint64_t alltoallv_peer_bytes(const AlltoallvPattern& p, int from, int to, int n, std::uint64_t total_bytes) {
  check_ranks(p, n);
  return peer_bytes_at(p, from, to, n, total_bytes);
}

std::size_t alltoallv_count(const AlltoallvPattern& p, std::size_t elems, DType t, int n) {
  if (p.from_matrix() || n <= 0) return 0;
  const std::size_t per_chunk = std::max<std::size_t>(1, kAlign / dtype_size(t));  // elements in 16 bytes
  return elems / std::size_t(n) / per_chunk * per_chunk;
}

AlltoallvSplit alltoallv_split(const AlltoallvPattern& p, int rank, int n, std::size_t count, DType t) {
  check_ranks(p, n);
  const std::size_t es = dtype_size(t);
  const std::uint64_t total = std::uint64_t(count) * std::uint64_t(n) * es;
  AlltoallvSplit s;
  for (int peer = 0; peer < n; ++peer) {
    s.send_displs.push_back(s.send_total);
    s.send_counts.push_back(std::size_t(peer_bytes_at(p, rank, peer, n, total) / es));
    s.send_total += s.send_counts.back();
    s.recv_displs.push_back(s.recv_total);
    s.recv_counts.push_back(std::size_t(peer_bytes_at(p, peer, rank, n, total) / es));
    s.recv_total += s.recv_counts.back();
  }
  return s;
}

AlltoallvTotals alltoallv_largest_totals(const AlltoallvPattern& p, int n, std::size_t count, DType t) {
  AlltoallvTotals most;
  // The generated split gives every rank the same totals; a matrix's rows and columns differ.
  for (int r = 0; r < (p.from_matrix() ? n : std::min(n, 1)); ++r) {
    const AlltoallvSplit s = alltoallv_split(p, r, n, count, t);
    most.send = std::max(most.send, s.send_total), most.recv = std::max(most.recv, s.recv_total);
  }
  return most;
}

AlltoallvSource alltoallv_source(const AlltoallvPattern& p, int rank, int n, std::size_t count, DType t,
                                 std::size_t i) {
  check_ranks(p, n);
  const std::size_t es = dtype_size(t);
  const std::uint64_t total = std::uint64_t(count) * std::uint64_t(n) * es;
  for (int from = 0; from < n; ++from) {
    const std::size_t part = std::size_t(peer_bytes_at(p, from, rank, n, total) / es);
    if (i >= part) {
      i -= part;
      continue;
    }
    std::size_t before = 0;  // what `from` sends to the ranks before this one, packed in rank order
    for (int to = 0; to < rank; ++to) before += std::size_t(peer_bytes_at(p, from, to, n, total) / es);
    return {from, before + i};
  }
  throw Error("alltoallv: receive element " + std::to_string(i) + " is past rank " + std::to_string(rank) +
              "'s receive buffer");
}

void check_alltoallv_run(const AlltoallvPattern& p, const std::vector<std::uint64_t>& sizes, int n) {
  if (!p.from_matrix()) return;
  check_ranks(p, n);
  const AlltoallvTotals most = alltoallv_largest_totals(p, n, 0, DType::u8);
  const std::uint64_t need = std::max(most.send, most.recv);
  for (std::uint64_t size : sizes)
    if (size != sizes.front() || size < need)
      throw UsageError("with " + std::string(kFileVar) + "=" + p.file + " the sizes must be one size of at least " +
                       std::to_string(need) + " bytes (the largest rank's send or receive total; nccl-tests' rule); "
                       "got " + std::to_string(size) + "; accepted: -b " + std::to_string(need) + " -e " +
                       std::to_string(need) + " or any equal -b and -e above it");
}

}  // namespace parbench
