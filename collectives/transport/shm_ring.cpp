// The shared-memory byte ring: a mapped segment, head and tail counters published with sequentially consistent
// atomics (so that a side going to sleep and the other side ringing its doorbell cannot miss each other).
#include "collectives/transport/shm_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/error.h"

namespace parbench {

namespace {
constexpr std::size_t kDataOffset = 256;  // past the header, cache-line aligned

char* map_segment(int fd, std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}
}  // namespace

ShmRing ShmRing::create(const std::string& name) {
  static_assert(sizeof(ShmRingHeader) <= kDataOffset);
  const std::size_t bytes = kDataOffset + kShmRingBytes;
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("shm_open " + name + ": " + std::strerror(errno));
  // posix_fallocate, not ftruncate: a full /dev/shm is an error now rather than a SIGBUS on first touch.
  const int e = posix_fallocate(fd, 0, off_t(bytes));
  char* p = e == 0 ? map_segment(fd, bytes) : nullptr;
  const int map_errno = errno;
  close(fd);
  if (!p) {
    shm_unlink(name.c_str());
    throw Error("shared memory " + name + " of " + std::to_string(bytes) + " bytes: " +
                std::strerror(e ? e : map_errno));
  }
  ShmRing r;
  r.h_ = new (p) ShmRingHeader{};
  r.h_->capacity = kShmRingBytes;
  r.h_->writer_pid = getpid();
  r.h_->cookie = std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                 (std::uint64_t(getpid()) << 40) ^ reinterpret_cast<std::uintptr_t>(p);
  r.h_->cookie_at = reinterpret_cast<std::uintptr_t>(&r.h_->cookie);
  r.data_ = p + kDataOffset;
  r.mapped_ = bytes;
  r.name_ = name;
  r.owner_ = true;
  return r;
}

int copy_from_process(long pid, std::uint64_t from, char* to, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {  // one call moves at most about 2 GiB, and may stop short
    iovec local{to + done, bytes - done}, remote{reinterpret_cast<void*>(from + done), bytes - done};
    const ssize_t k = process_vm_readv(pid_t(pid), &local, 1, &remote, 1, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k < 0 ? errno : EFAULT;
    done += std::size_t(k);
  }
  return 0;
}

ShmRing ShmRing::open(const std::string& name, bool try_pull) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw Error("shm_open " + name + ": " + std::strerror(errno));
  const std::size_t bytes = kDataOffset + kShmRingBytes;
  struct stat st {};
  char* p = fstat(fd, &st) == 0 && std::size_t(st.st_size) == bytes ? map_segment(fd, bytes) : nullptr;
  close(fd);
  if (!p) throw Error("shared memory " + name + ": not a ring of " + std::to_string(bytes) + " bytes");
  ShmRing r;
  r.h_ = reinterpret_cast<ShmRingHeader*>(p);
  r.data_ = p + kDataOffset;
  r.mapped_ = bytes;
  r.name_ = name;
  // The cookie read through the system, compared with the one in the segment: a process of another pid namespace,
  // a kernel without the call, or a container that forbids it leave the messages in the ring.
  std::uint64_t seen = ~r.h_->cookie;
  const bool can = try_pull && copy_from_process(r.writer_pid(), r.h_->cookie_at, reinterpret_cast<char*>(&seen),
                                                 sizeof seen) == 0 && seen == r.h_->cookie;
  r.h_->pull.store(can ? 1 : -1, std::memory_order_release);
  return r;
}

ShmRing& ShmRing::operator=(ShmRing&& o) noexcept {
  std::swap(h_, o.h_);
  std::swap(data_, o.data_);
  std::swap(mapped_, o.mapped_);
  std::swap(name_, o.name_);
  std::swap(owner_, o.owner_);
  return *this;
}

ShmRing::~ShmRing() {
  if (owner_) unlink();
  if (h_) munmap(h_, mapped_);
}

void ShmRing::unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

std::size_t ShmRing::write(const iovec* pieces, int n) {
  const std::uint64_t head = h_->head.load(std::memory_order_relaxed);
  const std::uint64_t room = h_->capacity - (head - h_->tail.load(std::memory_order_acquire));
  std::size_t done = 0;
  for (int i = 0; i < n && done < room; ++i) {
    const char* src = static_cast<const char*>(pieces[i].iov_base);
    std::size_t len = std::min<std::size_t>(pieces[i].iov_len, room - done);
    while (len > 0) {  // in at most two parts: up to the ring's end, then from its start
      const std::size_t at = (head + done) % h_->capacity, part = std::min(len, h_->capacity - at);
      std::memcpy(data_ + at, src, part);
      src += part, len -= part, done += part;
    }
  }
  if (done) h_->head.store(head + done, std::memory_order_seq_cst);
  return done;
}

std::size_t ShmRing::read(char* dst, std::size_t n) {
  const std::uint64_t tail = h_->tail.load(std::memory_order_relaxed);
  const std::size_t avail = std::size_t(h_->head.load(std::memory_order_acquire) - tail);
  std::size_t len = std::min(n, avail), done = 0;
  while (len > 0) {
    const std::size_t at = (tail + done) % h_->capacity, part = std::min(len, h_->capacity - at);
    std::memcpy(dst + done, data_ + at, part);
    len -= part, done += part;
  }
  if (done) h_->tail.store(tail + done, std::memory_order_seq_cst);
  return done;
}

bool ShmRing::has_data() const {
  return h_->head.load(std::memory_order_seq_cst) != h_->tail.load(std::memory_order_seq_cst);
}

bool ShmRing::has_room() const {
  return h_->head.load(std::memory_order_seq_cst) - h_->tail.load(std::memory_order_seq_cst) < h_->capacity;
}

}  // namespace parbench
