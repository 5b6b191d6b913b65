// CsvTable: fast-cpp-csv-parser fixed at kMaxColumns string columns (unused slots get names no header has),
// so one reader serves every figure's column set; numbers are parsed here to name the cell on errors.
#define CSV_IO_NO_THREAD
#include "plots/csv_table.h"

// fccp's error types copy the file name with strncpy into a fixed buffer, which g++ flags inside the header.
#pragma GCC diagnostic push
#if !defined(__clang__)  // (clang has no such warning)
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#endif
#include <libfccp/csv.h>
#pragma GCC diagnostic pop

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <tuple>

#include "base/error.h"

namespace parbench::plots {
namespace {

constexpr std::size_t kMaxColumns = 32;
using Reader = io::CSVReader<kMaxColumns, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>,
                             io::throw_on_overflow, io::empty_line_comment>;

std::string column_names(const std::vector<ColumnSpec>& columns, bool required) {
  std::string out;
  for (const ColumnSpec& c : columns) {
    if (c.required != required) continue;
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

}  // namespace

CsvTable CsvTable::read(const std::string& path, const std::vector<ColumnSpec>& columns) {
  PB_CHECK(columns.size() <= kMaxColumns, "CsvTable::read: too many columns requested");
  {
    std::ifstream probe(path);
    if (!probe) throw UsageError("cannot open input '" + path + "': " + std::strerror(errno));
  }
  CsvTable table;
  table.path_ = path;
  std::array<std::string, kMaxColumns> names;
  for (std::size_t i = 0; i < kMaxColumns; ++i)
    names[i] = i < columns.size() ? columns[i].name : "\x01unused" + std::to_string(i);
  for (const ColumnSpec& c : columns) table.names_.push_back(c.name);
  try {
    Reader reader(path);
    std::apply([&](const auto&... n) { reader.read_header(io::ignore_extra_column | io::ignore_missing_column, n...); },
               names);
    for (const ColumnSpec& c : columns) {
      const bool present = reader.has_column(c.name);
      if (!present && c.required)
        throw UsageError(path + ":1: missing column '" + c.name + "' in the header (this figure needs " +
                         column_names(columns, true) + ")");
      table.present_.push_back(present);
    }
    std::array<std::string, kMaxColumns> row;
    while (true) {
      for (std::string& cell : row) cell.clear();
      const bool got = std::apply([&](auto&... cell) { return reader.read_row(cell...); }, row);
      if (!got) break;
      table.cells_.emplace_back(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(columns.size()));
      table.lines_.push_back(reader.get_file_line());
    }
  } catch (const io::error::base& e) {
    // fccp's messages carry file, line and column ("... in column "x" in line 3 in file "r.csv"").
    throw UsageError(path + ": " + e.what());
  }
  if (table.cells_.empty()) throw UsageError(path + ": no data rows (only a header)");
  return table;
}

bool CsvTable::has_column(const std::string& name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return present_[i];
  return false;
}

std::size_t CsvTable::index(const std::string& column) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == column) return i;
  throw Error("CsvTable: column '" + column + "' was not requested when reading " + path_);
}

const std::string& CsvTable::text(std::size_t row, const std::string& column) const {
  return cells_.at(row)[index(column)];
}

std::string CsvTable::where(std::size_t row, const std::string& column) const {
  return path_ + ":" + std::to_string(lines_[row]) + ": column '" + column + "'";
}

std::optional<double> CsvTable::optional_number(std::size_t row, const std::string& column) const {
  const std::string& s = text(row, column);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && p == end && !std::isfinite(v)))
    throw UsageError(where(row, column) + ": '" + s + "' is out of range (expected a finite number)");
  if (ec != std::errc() || p != end) throw UsageError(where(row, column) + ": '" + s + "' is not a number");
  return v;
}

double CsvTable::number(std::size_t row, const std::string& column) const {
  const std::optional<double> v = optional_number(row, column);
  if (!v) throw UsageError(where(row, column) + ": the cell is empty (expected a number)");
  return *v;
}

std::int64_t CsvTable::integer(std::size_t row, const std::string& column) const {
  const double v = number(row, column);
  if (v != std::floor(v) || std::fabs(v) > 9.0e15)
    throw UsageError(where(row, column) + ": '" + text(row, column) + "' is not an integer");
  return static_cast<std::int64_t>(v);
}

}  // namespace parbench::plots
