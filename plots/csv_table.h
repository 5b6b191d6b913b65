// A results CSV read into memory (fast-cpp-csv-parser underneath): the columns a figure asks for, by name,
// in any order, extra columns ignored; typed cell access whose errors name the file, line and column.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parbench::plots {

struct ColumnSpec {
  std::string name;
  bool required = true;  // absent from the header -> UsageError naming the column
};

class CsvTable {
 public:
  // Reads `path`. Errors (all UsageError): the file cannot be opened; a required column is missing; a row with
  // too few/many fields or an unterminated quote (fccp's message with file and line); no data rows.
  static CsvTable read(const std::string& path, const std::vector<ColumnSpec>& columns);

  const std::string& path() const { return path_; }
  std::size_t size() const { return cells_.size(); }
  bool has_column(const std::string& name) const;
  unsigned line(std::size_t row) const { return lines_[row]; }

  // The raw (trimmed, unquoted) text; "" for an empty cell or an absent optional column.
  const std::string& text(std::size_t row, const std::string& column) const;
  bool empty(std::size_t row, const std::string& column) const { return text(row, column).empty(); }

  // A finite number; UsageError "<file>:<line>: column '<name>': '<text>' is not a number" (or "is empty").
  double number(std::size_t row, const std::string& column) const;
  // nullopt for an empty cell or an absent optional column; errors as number() otherwise.
  std::optional<double> optional_number(std::size_t row, const std::string& column) const;
  // An integer (e.g. ranks, bytes); errors as number() plus "is not an integer".
  std::int64_t integer(std::size_t row, const std::string& column) const;

 private:
  std::size_t index(const std::string& column) const;
  std::string where(std::size_t row, const std::string& column) const;

  std::string path_;
  std::vector<std::string> names_;
  std::vector<bool> present_;
  std::vector<std::vector<std::string>> cells_;
  std::vector<unsigned> lines_;
};

}  // namespace parbench::plots
