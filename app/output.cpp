// Output path checks, the row-at-a-time CSV file and the streaming table.
#include "app/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"

namespace parbench {
namespace {

const char* const kAcceptedPath = "expected a file in an existing directory where files can be created";

[[noreturn]] void refuse_path(const std::string& option, const std::string& path, const std::string& why) {
  throw UsageError(option + " '" + path + "': " + why + "; " + kAcceptedPath);
}

// Creates and removes a uniquely named file in `dir`: the only test that also holds for read-only mounts,
// ACLs and root (who passes access(2) everywhere). The atomic writers make their temporary files there too.
void probe_directory(const std::string& option, const std::string& path, const std::string& dir) {
  static int sequence = 0;
  const std::string probe =
      dir + "/.parbench_probe." + std::to_string(::getpid()) + "." + std::to_string(sequence++);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) refuse_path(option, path, "cannot create a file in directory '" + dir + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

void check_output_path(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) refuse_path(option, path, "the path is empty");
  std::error_code ec;
  if (path.back() == '/' || fs::is_directory(path, ec)) refuse_path(option, path, "it is a directory");
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (!fs::exists(dir, ec)) refuse_path(option, path, "directory '" + dir + "' does not exist");
  if (!fs::is_directory(dir, ec)) refuse_path(option, path, "'" + dir + "' is not a directory");
  probe_directory(option, path, dir);
  if (fs::exists(path, ec)) {
    if (!fs::is_regular_file(path, ec)) refuse_path(option, path, "it exists and is not a regular file");
    if (::access(path.c_str(), W_OK) != 0) refuse_path(option, path, std::string("it cannot be written: ") + std::strerror(errno));
  }
}

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].second.empty()) continue;
    check_output_path(outputs[i].first, outputs[i].second);
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].second.empty()) continue;
      const auto a = fs::weakly_canonical(outputs[i].second), b = fs::weakly_canonical(outputs[j].second);
      if (a == b)
        throw UsageError(outputs[j].first + " and " + outputs[i].first + " name the same file '" +
                         outputs[i].second + "'; expected a different file for each output");
    }
  }
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch != '"') fields.back() += ch;
      else if (i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', ++i;
      else quoted = false;
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.emplace_back();
    } else if (ch != '\r') {
      fields.back() += ch;
    }
  }
  return fields;
}

CsvRowFile::CsvRowFile(std::string option, std::string path, std::string header, Mode mode)
    : option_(std::move(option)), path_(std::move(path)), header_(std::move(header)), mode_(mode) {
  check_output_path(option_, path_);
  if (mode_ != Mode::append) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  if (text.empty()) return;
  std::istringstream lines(text);
  std::string first, line;
  std::getline(lines, first);
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first != header_)
    throw UsageError(option_ + " '" + path_ + "': its header is\n  " + first + "\nbut this program writes\n  " +
                     header_ + "\nexpected a file with the same header, or a new file");
  while (std::getline(lines, line))
    if (!line.empty() && line != "\r") existing_.push_back(split_csv_line(line));
  write_header_ = false;
  needs_newline_ = text.back() != '\n';
}

CsvRowFile::~CsvRowFile() {
  if (fd_ >= 0) ::close(fd_);
}

void CsvRowFile::open_for_first_row() {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode_ == Mode::append ? O_APPEND : O_TRUNC);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
}

void CsvRowFile::append(const std::string& line) {
  if (!enabled()) return;
  std::string chunk;
  if (fd_ < 0) {
    open_for_first_row();
    if (needs_newline_) chunk += '\n';
    if (write_header_) chunk += header_ + '\n';
  }
  chunk += line + '\n';
  // One write(2) for the whole row: a regular file takes it whole unless the disk fills, and O_APPEND puts it
  // after anything another writer added. A short write is finished rather than left torn.
  std::size_t done = 0;
  while (done < chunk.size()) {
    const ssize_t n = ::write(fd_, chunk.data() + done, chunk.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write '" + path_ + "': " + std::strerror(errno));
    done += std::size_t(n);
  }
}

StreamingTable::StreamingTable(std::vector<Column> columns, const std::string& csv_path,
                               const std::string& json_path, CsvRowFile::Mode mode)
    : table_(std::move(columns)), json_path_(json_path) {
  check_output_paths({{"--csv", csv_path}, {"--json", json_path}});
  if (!csv_path.empty()) csv_.emplace("--csv", csv_path, table_.header_csv(), mode);
}

const std::vector<std::vector<std::string>>& StreamingTable::existing_rows() const {
  static const std::vector<std::vector<std::string>> none;
  return csv_ ? csv_->existing_rows() : none;
}

void StreamingTable::add_row(std::vector<Cell> row) {
  const std::string line = table_.csv_line(row);
  table_.add_row(std::move(row));
  if (csv_) csv_->append(line);
  if (!json_path_.empty()) table_.write_json(json_path_);
}

}  // namespace parbench
