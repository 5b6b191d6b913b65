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
  // Single copy: the writer's process, where a cookie lies in its memory, and the cookie; the reader sets `pull`
  // to 1 once it has read that cookie through process_vm_readv (so it may copy large messages straight out of the
  // writer's buffers), to -1 when the system refused (or it was told not to).
  std::int64_t writer_pid;
  std::uint64_t cookie_at;
  std::uint64_t cookie;
  std::atomic<int> pull;
};

// process_vm_readv of `bytes` at `from` in process `pid` into `to`, whole or not at all: 0, or the errno.
int copy_from_process(long pid, std::uint64_t from, char* to, std::size_t bytes);

class ShmRing {
 public:
  // The writer's side: a new segment (a name of its own, unlinked once the reader has mapped it), or an Error
  // saying why not (no /dev/shm, too little room in it).
  static ShmRing create(const std::string& name);
  // The reader's side: the segment `name`, made by the writer. With `try_pull`, it checks whether it can read the
  // writer's memory (see ShmRingHeader::pull).
  static ShmRing open(const std::string& name, bool try_pull);
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
  // The reader may copy large messages straight from the writer's memory.
  bool pulls() const { return h_->pull.load(std::memory_order_acquire) == 1; }
  long writer_pid() const { return long(h_->writer_pid); }
  ShmRingHeader& header() { return *h_; }

 private:
  ShmRingHeader* h_ = nullptr;
  char* data_ = nullptr;
  std::size_t mapped_ = 0;
  std::string name_;
  bool owner_ = false;  // created it: unlinks the name if still there
};

}  // namespace parbench
