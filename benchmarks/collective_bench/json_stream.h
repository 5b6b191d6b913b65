// -J's file written as the rows come: a JSON object whose "results" list grows by one element per row, the text
// after the list (the totals, the closing brackets) written after each element and overwritten by the next, so
// that each row costs its own bytes (not the whole file again) and the file parses whenever no write is under way.
#pragma once
#include <cstdint>
#include <string>

namespace parbench {

class JsonListFile {
 public:
  JsonListFile() = default;
  JsonListFile(const JsonListFile&) = delete;
  JsonListFile& operator=(const JsonListFile&) = delete;
  ~JsonListFile();

  // Creates (or empties) `path` and writes `head` (the text up to and including the list's '['), then `tail`.
  // Throws std::runtime_error naming the path when it cannot be written.
  void open(const std::string& path, const std::string& head, const std::string& tail);
  bool is_open() const { return fd_ >= 0; }
  // One element (a JSON value's text) at the end of the list, then `tail` (from the list's ']' to the end).
  void append(const std::string& element, const std::string& tail);
  // Replaces the text after the list.
  void set_tail(const std::string& tail);
  // Every byte handed to the file since open(), head included.
  std::uint64_t bytes_written() const { return written_; }

 private:
  void write_at(std::uint64_t offset, const std::string& text);
  std::string path_;
  int fd_ = -1;
  std::uint64_t list_end_ = 0, file_end_ = 0, written_ = 0;
  bool empty_ = true;
};

}  // namespace parbench
