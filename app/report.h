// Result tables and their three writers: aligned text (for rank 0's terminal), CSV (RFC 4180) and JSON.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/csv_columns.h"

namespace parbench {

// Empty (monostate) cells print as "" in text/CSV and null in JSON.
using Cell = std::variant<std::monostate, std::string, std::int64_t, double>;

struct Column {
  std::string name;  // CSV header and JSON key
  int precision = 3;  // digits after the point for doubles in text and CSV
};

// A CSV kind's header (core/csv_columns.h) as a table's columns.
std::vector<Column> columns_of(std::span<const csv::HeaderColumn> header);

class Table {
 public:
  explicit Table(std::vector<Column> columns);
  void add_row(std::vector<Cell> row);  // throws Error when the row has the wrong number of cells

  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }
  std::string header_csv() const;
  std::string csv_line(const std::vector<Cell>& row) const;  // one row as CSV, without the newline

  void write_text(std::ostream& os) const;  // header line, then right-aligned columns
  std::string to_csv(bool with_header = true) const;
  nlohmann::json to_json() const;  // array of objects keyed by column name

  // Writes the whole table atomically (temp file + rename). With append = true and an existing non-empty file,
  // the file's header must equal this table's header (else Error naming both) and only rows are added.
  void write_csv(const std::string& path, bool append = false) const;
  void write_json(const std::string& path) const;

 private:
  std::string format(const Cell& c, const Column& col) const;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// RFC 4180: quote fields containing comma, quote, CR or LF; double the quotes inside.
std::string csv_escape(const std::string& field);

// Writes `content` to `path` via a temporary file in the same directory and a rename, so readers never see a
// half-written file. Throws Error naming the path when the directory is missing or not writable.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace parbench
