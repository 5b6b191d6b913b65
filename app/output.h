// Result files that survive an interrupted or failed run: output paths checked before any work, CSV rows
// appended as they are measured (one write(2) per row, so a reader or a killed process never sees half a row),
// JSON files rewritten atomically after each row.
#pragma once
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "app/report.h"

namespace parbench {

// Refuses (UsageError naming the option, the path and the accepted form) a path whose directory is missing,
// is not a directory or does not let us create a file, a path that is a directory, and an existing file we
// cannot write. Creates and removes a probe file in the directory; leaves nothing behind.
void check_output_path(const std::string& option, const std::string& path);

// check_output_path for each (option, path) with a non-empty path, and refuses two options naming one file.
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs);

// Splits one CSV line (RFC 4180 quoting, as csv_escape writes it) into its fields.
std::vector<std::string> split_csv_line(const std::string& line);

// A CSV file that grows one row at a time.
//   replace: the file is (re)created with the header at the first row, so a run that fails before its first
//            row leaves an existing file untouched and creates none;
//   append:  an existing non-empty file keeps its rows; its header must equal ours (else UsageError naming
//            both, at construction, before any work).
class CsvRowFile {
 public:
  enum class Mode { replace, append };
  CsvRowFile() = default;  // no file: append() does nothing
  CsvRowFile(std::string option, std::string path, std::string header, Mode mode);
  CsvRowFile(const CsvRowFile&) = delete;
  CsvRowFile& operator=(const CsvRowFile&) = delete;
  ~CsvRowFile();

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // The rows already in the file when it was opened in append mode (fields split), for --resume.
  const std::vector<std::vector<std::string>>& existing_rows() const { return existing_; }
  // Appends `line` (no trailing newline) with one write; throws Error naming the path on failure.
  void append(const std::string& line);

 private:
  void open_for_first_row();
  std::string option_, path_, header_;
  Mode mode_ = Mode::replace;
  bool needs_newline_ = false;  // the existing file's last line had no '\n'
  bool write_header_ = true;
  int fd_ = -1;
  std::vector<std::vector<std::string>> existing_;
};

// A result table whose rows go to the files as they are added: CSV (--csv) appended, JSON (--json, an array
// of row objects) rewritten atomically. Paths are checked at construction.
class StreamingTable {
 public:
  StreamingTable(std::vector<Column> columns, const std::string& csv_path, const std::string& json_path,
                 CsvRowFile::Mode mode = CsvRowFile::Mode::replace);
  void add_row(std::vector<Cell> row);
  const Table& table() const { return table_; }
  // The CSV's rows from before this run (append mode), for --resume; empty without --csv.
  const std::vector<std::vector<std::string>>& existing_rows() const;

 private:
  Table table_;
  std::optional<CsvRowFile> csv_;
  std::string json_path_;
};

}  // namespace parbench
