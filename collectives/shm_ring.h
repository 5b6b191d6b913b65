// A one-way byte ring in POSIX shared memory between two processes of one node (one writer, one reader): the TCP
// mesh carries a same-node pair's messages through two of these instead of the socket, which then only rings
// doorbells (a byte telling a sleeping side that data or room is there) and tells when the peer process ended.
#pragma once
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace parbench {

inline constexpr std::size_t kShmRingBytes = std::size_t(2) << 20;

struct ShmRingHeader {
  alignas(64) std::atomic<std::uint64_t> head;  // bytes written, by the writer
  alignas(64) std::atomic<std::uint64_t> tail;  // bytes read, by the reader
  alignas(64) std::atomic<int> reader_sleeping;  // the reader waits for a doorbell before it looks again
  alignas(64) std::atomic<int> writer_sleeping;  // the writer waits for room
  std::uint64_t capacity;
};

class ShmRing {
 public:
  // The writer's side: a new segment (a name of its own, unlinked once the reader has mapped it), or an Error
  // saying why not (no /dev/shm, too little room in it).
  static ShmRing create(const std::string& name);
  // The reader's side: the segment `name`, made by the writer.
  static ShmRing open(const std::string& name);
  ShmRing() = default;
  ShmRing(ShmRing&& o) noexcept { *this = std::move(o); }
  ShmRing& operator=(ShmRing&& o) noexcept;
  ~ShmRing();
  ShmRing(const ShmRing&) = delete;
  ShmRing& operator=(const ShmRing&) = delete;

  explicit operator bool() const { return h_ != nullptr; }
  const std::string& name() const { return name_; }
  void unlink();  // the name goes; the mappings stay

  // Copies what fits of the `n` pieces; the bytes written (0 when full).
  std::size_t write(const iovec* pieces, int n);
  // Copies up to `n` bytes out; the bytes read (0 when empty).
  std::size_t read(char* dst, std::size_t n);
  bool has_data() const;
  bool has_room() const;
  ShmRingHeader& header() { return *h_; }

 private:
  ShmRingHeader* h_ = nullptr;
  char* data_ = nullptr;
  std::size_t mapped_ = 0;
  std::string name_;
  bool owner_ = false;  // created it: unlinks the name if still there
};

}  // namespace parbench
