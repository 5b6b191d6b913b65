// The emulated NCCL between processes: a shared-memory segment per communicator.
#include "device/emu/nccl_shm.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "device/emu/emu.h"

namespace parbench::gpu_emu {
namespace {

constexpr int kMaxRanks = 64;
constexpr std::size_t kChunk = 256 << 10;  // bytes a channel holds at once
constexpr std::uint64_t kMagic = 0x70626e63636c3031ull;

// One direction between two ranks: a single slot, full or empty.
struct Channel {
  std::uint64_t full;
  std::uint64_t bytes;  // in the slot
  char data[kChunk];
};

struct Header {
  std::atomic<std::uint64_t> magic;  // set last by the creator: the rest is initialised
  pthread_mutex_t mutex;
  // Bumped (under the mutex) at every change a waiter may look for; waiters sleep on it with a futex. Not a
  // process-shared pthread_cond_t: its broadcast can block until a waiter in a stopped process (SIGSTOP) runs,
  // so a rank's abort would hang behind a stalled peer.
  std::atomic<std::uint32_t> changes;
  int size;
  int joined;
  int aborted;
  int pids[kMaxRanks];
  int gpus[kMaxRanks];  // the node's GPU of each rank
  char failure[1024];
};

std::size_t segment_bytes(int n) { return sizeof(Header) + std::size_t(n) * std::size_t(n) * sizeof(Channel); }

timespec deadline_after(double seconds) {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  const auto ns = std::int64_t(seconds * 1e9) + t.tv_nsec;
  t.tv_sec += time_t(ns / 1000000000);
  t.tv_nsec = long(ns % 1000000000);
  return t;
}

}  // namespace

struct ShmClique {
  Header* h = nullptr;
  std::size_t bytes = 0;
  Channel* channel(int from, int to) const {
    return reinterpret_cast<Channel*>(reinterpret_cast<char*>(h) + sizeof(Header)) + (from * h->size + to);
  }
  ~ShmClique() {
    if (h) munmap(h, bytes);
  }
};

namespace {

struct Lock {
  explicit Lock(Header* h) : h(h) { pthread_mutex_lock(&h->mutex); }
  ~Lock() { pthread_mutex_unlock(&h->mutex); }
  Header* h;
};

// Wakes every waiter of the clique; called with the mutex held.
void notify_all(Header* h) {
  h->changes.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&h->changes), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Waits (the mutex held on entry and on return) until the clique changes; reports and aborts the process after
// PARBENCH_EMU_WAIT_TIMEOUT (an NCCL hang).
void wait(Header* h, const timespec& deadline, const std::string& what) {
  const std::uint32_t seen = h->changes.load(std::memory_order_acquire);
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  std::int64_t left = std::int64_t(deadline.tv_sec - now.tv_sec) * 1000000000 + (deadline.tv_nsec - now.tv_nsec);
  if (left > 0) {
    const timespec rel{time_t(left / 1000000000), long(left % 1000000000)};
    pthread_mutex_unlock(&h->mutex);
    // A change after `seen` was read (under the mutex) makes the futex return at once: no wake-up is lost.
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&h->changes), FUTEX_WAIT, seen, &rel, nullptr, 0);
    pthread_mutex_lock(&h->mutex);
    clock_gettime(CLOCK_MONOTONIC, &now);
    left = std::int64_t(deadline.tv_sec - now.tv_sec) * 1000000000 + (deadline.tv_nsec - now.tv_nsec);
  }
  if (left <= 0 && h->changes.load(std::memory_order_acquire) == seen) {
    std::fprintf(stderr,
                 "parbench-emu NCCL: waited more than %g s (PARBENCH_EMU_WAIT_TIMEOUT) for %s; a rank never called "
                 "the matching operation (an NCCL hang on a GPU)\n",
                 wait_timeout_s(), what.c_str());
    std::abort();
  }
}

void fail_locked(Header* h, const std::string& why) {
  if (!h->failure[0]) std::snprintf(h->failure, sizeof h->failure, "%s", why.c_str());
  if (!h->aborted) std::fprintf(stderr, "parbench-emu NCCL: %s\n", why.c_str());
  h->aborted = 1;
  notify_all(h);
}

}  // namespace

namespace {

using Deadline = std::chrono::steady_clock::time_point;

// Rank 0 creates and sizes the segment (replacing one left by a crashed run); the others wait until it exists.
// Returns the descriptor, or -1 with *error set.
int open_segment(const std::string& name, std::size_t bytes, int rank, Deadline give_up, std::string* error) {
  if (rank == 0) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {  // left by a run that crashed
      shm_unlink(name.c_str());
      fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) {
      *error = "cannot create shared memory " + name + ": " + std::strerror(errno);
      if (fd >= 0) close(fd);
      return -1;
    }
    return fd;
  }
  for (;;) {  // until rank 0 has created and sized it
    const int fd = shm_open(name.c_str(), O_RDWR, 0600);
    struct stat st {};
    if (fd >= 0 && fstat(fd, &st) == 0 && std::size_t(st.st_size) >= bytes) return fd;
    if (fd >= 0) close(fd);
    if (std::chrono::steady_clock::now() > give_up) {
      *error = "rank " + std::to_string(rank) + " waited " + std::to_string(wait_timeout_s()) + " s for rank 0 to create " + name;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Rank 0 makes the process-shared lock; the others wait until it has.
bool init_header(Header* h, int n, int rank, const std::string& name, Deadline give_up, std::string* error) {
  if (rank == 0) {
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&h->mutex, &ma);
    h->changes.store(0);
    h->size = n;
    h->magic.store(kMagic, std::memory_order_release);
    return true;
  }
  while (h->magic.load(std::memory_order_acquire) != kMagic) {
    if (std::chrono::steady_clock::now() > give_up) {
      *error = "shared memory " + name + " was never initialised by rank 0";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Registers this rank, waits for all, and refuses two ranks on one GPU (as NCCL: "Duplicate GPU detected").
bool join_ranks(Header* h, int n, int rank, int physical_gpu, const std::string& name, std::string* error) {
  Lock lock(h);
  if (h->size != n) {
    *error = "rank " + std::to_string(rank) + " says " + std::to_string(n) + " ranks, rank 0 said " + std::to_string(h->size);
    return false;
  }
  h->pids[rank] = int(getpid());
  h->gpus[rank] = physical_gpu;
  ++h->joined;
  notify_all(h);
  const timespec deadline = deadline_after(wait_timeout_s());
  while (h->joined < n) wait(h, deadline, "every rank to join NCCL communicator " + name);
  if (rank == 0) shm_unlink(name.c_str());  // everyone has it mapped; the name is no longer needed
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (h->gpus[a] == h->gpus[b]) {
        *error = "duplicate GPU detected: rank " + std::to_string(a) + " and rank " + std::to_string(b) +
                 " both on the node's GPU " + std::to_string(h->gpus[a]);
        return false;
      }
  return true;
}

}  // namespace

std::shared_ptr<ShmClique> shm_join(const std::string& name, int n, int rank, int physical_gpu, std::string* error) {
  if (n < 1 || n > kMaxRanks || rank < 0 || rank >= n) {
    *error = "rank " + std::to_string(rank) + " of " + std::to_string(n) + " (at most " + std::to_string(kMaxRanks) + ")";
    return nullptr;
  }
  const std::size_t bytes = segment_bytes(n);
  const Deadline give_up = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(wait_timeout_s()));
  const int fd = open_segment(name, bytes, rank, give_up, error);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *error = "cannot map shared memory " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  auto c = std::make_shared<ShmClique>();
  c->h = static_cast<Header*>(p);
  c->bytes = bytes;
  if (!init_header(c->h, n, rank, name, give_up, error) || !join_ranks(c->h, n, rank, physical_gpu, name, error))
    return nullptr;
  return c;
}

int shm_size(const ShmClique& c) { return c.h->size; }

bool shm_all_in_this_process(const ShmClique& c) {
  for (int r = 0; r < c.h->size; ++r)
    if (c.h->pids[r] != int(getpid())) return false;
  return true;
}

void shm_fail(ShmClique& c, const std::string& why) {
  Lock lock(c.h);
  fail_locked(c.h, why);
}

std::string shm_failure(ShmClique& c) {
  Lock lock(c.h);
  return c.h->failure;
}

bool shm_exchange(ShmClique& c, int me, const std::vector<ShmTransfer>& ops, const std::string& what) {
  Header* h = c.h;
  // Per op: bytes moved so far, and whether its length went first (every transfer starts with its size).
  std::vector<std::size_t> done(ops.size(), 0);
  std::vector<bool> started(ops.size(), false), finished(ops.size(), false);
  Lock lock(h);
  const timespec deadline = deadline_after(wait_timeout_s());
  for (;;) {
    if (h->aborted) return false;
    bool progress = false, all = true;
    std::vector<bool> peer_busy_send(std::size_t(h->size), false), peer_busy_recv(std::size_t(h->size), false);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (finished[i]) continue;
      all = false;
      const ShmTransfer& op = ops[i];
      auto& busy = op.send ? peer_busy_send : peer_busy_recv;
      if (busy[std::size_t(op.peer)]) continue;  // an earlier transfer with this peer goes first
      busy[std::size_t(op.peer)] = true;
      Channel* ch = op.send ? c.channel(me, op.peer) : c.channel(op.peer, me);
      if (op.send && !ch->full) {
        std::size_t at = 0;
        if (!started[i]) {
          std::memcpy(ch->data, &op.bytes, sizeof op.bytes);
          at = sizeof op.bytes;
          started[i] = true;
        }
        const std::size_t part = std::min(kChunk - at, op.bytes - done[i]);
        std::memcpy(ch->data + at, static_cast<const char*>(op.data) + done[i], part);
        done[i] += part;
        ch->bytes = at + part;
        ch->full = 1;
        finished[i] = done[i] == op.bytes;
        progress = true;
      } else if (!op.send && ch->full) {
        std::size_t at = 0;
        if (!started[i]) {
          std::size_t sent;
          std::memcpy(&sent, ch->data, sizeof sent);
          if (sent != op.bytes) {
            fail_locked(h, "rank " + std::to_string(me) + " expected " + std::to_string(op.bytes) + " bytes from rank " +
                               std::to_string(op.peer) + ", which sent " + std::to_string(sent) + " (" + what + ")");
            return false;
          }
          at = sizeof sent;
          started[i] = true;
        }
        const std::size_t part = ch->bytes - at;
        std::memcpy(static_cast<char*>(op.data) + done[i], ch->data + at, part);
        done[i] += part;
        ch->full = 0;
        finished[i] = done[i] == op.bytes;
        progress = true;
      }
    }
    if (all) return true;
    if (progress) {
      notify_all(h);
      continue;
    }
    wait(h, deadline, "rank " + std::to_string(me) + "'s " + what);
  }
}

}  // namespace parbench::gpu_emu
