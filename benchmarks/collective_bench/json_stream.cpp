// See json_stream.h. One pwrite per element (the element and the new tail together), so that a run killed
// between rows leaves the previous complete text; a tail shorter than the last one is cut with ftruncate.
#include "json_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace parbench {

JsonListFile::~JsonListFile() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonListFile::write_at(std::uint64_t offset, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd_, text.data() + done, text.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot write '" + path_ + "': " + std::strerror(errno));
    done += std::size_t(n);
  }
  written_ += text.size();
  const std::uint64_t end = offset + text.size();
  if (end < file_end_ && ::ftruncate(fd_, off_t(end)) != 0)
    throw std::runtime_error("cannot shorten '" + path_ + "': " + std::strerror(errno));
  file_end_ = end;
}

void JsonListFile::open(const std::string& path, const std::string& head, const std::string& tail) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
  written_ = file_end_ = 0;
  empty_ = true;
  write_at(0, head + tail);
  list_end_ = head.size();
}

void JsonListFile::append(const std::string& element, const std::string& tail) {
  const std::string item = (empty_ ? "\n" : ",\n") + element;
  write_at(list_end_, item + tail);
  list_end_ += item.size();
  empty_ = false;
}

void JsonListFile::set_tail(const std::string& tail) { write_at(list_end_, tail); }

}  // namespace parbench
