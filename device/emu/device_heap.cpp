// The emulated GPUs' device memory file: one memfd per process from which every device allocation is mapped, at
// offsets never reused, so that CUDA IPC can hand another process (file descriptor, offset) and the two map the same
// pages. A memfd has no name in the file system: nothing is left behind when a process dies.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>

#include "base/sanitizers.h"
#include "device/emu/device_heap.h"

#ifdef PB_ASAN
#include <sanitizer/asan_interface.h>
#define PB_EMU_POISON(p, n) __asan_poison_memory_region((p), (n))
#define PB_EMU_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define PB_EMU_POISON(p, n) ((void)(p), (void)(n))
#define PB_EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace parbench::gpu_emu {
namespace {

struct MemoryFile {
  std::mutex m;
  int fd = -1;
  std::uint64_t nonce = 0;
  std::uint64_t next = kExportTableBytes;  // the next free offset
};

MemoryFile& memory_file() {
  static MemoryFile* h = [] {
    auto* x = new MemoryFile;  // never destroyed: memory may be freed while the program exits
    x->nonce = (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}() ^ std::uint64_t(::getpid());
    x->fd = ::memfd_create(("parbench-emu-device-memory-" + std::to_string(x->nonce)).c_str(), MFD_CLOEXEC);
    if (x->fd < 0 || ::ftruncate(x->fd, off_t(x->next)) != 0) {
      std::fprintf(stderr, "parbench-emu: cannot create the device memory file (memfd_create): %s\n",
                   std::strerror(errno));
      std::exit(1);
    }
    return x;
  }();
  return *h;
}

std::size_t page_bytes() {
  static const std::size_t p = std::size_t(::sysconf(_SC_PAGESIZE));
  return p;
}

}  // namespace

int heap_fd() { return memory_file().fd; }
std::uint64_t heap_nonce() { return memory_file().nonce; }
std::string heap_file_name() { return "parbench-emu-device-memory-" + std::to_string(heap_nonce()); }

std::size_t heap_span(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + page_bytes() - 1) / page_bytes() * page_bytes();
}

void* heap_alloc(std::size_t bytes, std::uint64_t* offset) {
  MemoryFile& h = memory_file();
  {
    std::lock_guard<std::mutex> l(h.m);
    *offset = h.next;
    if (::ftruncate(h.fd, off_t(h.next + heap_span(bytes))) != 0) return nullptr;
    h.next += heap_span(bytes);
  }
  return map_device_file(h.fd, *offset, bytes);
}

void* map_device_file(int fd, std::uint64_t offset, std::size_t bytes) {
  const std::size_t span = heap_span(bytes);
  void* r = ::mmap(nullptr, span + page_bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  if (::mmap(r, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off_t(offset)) == MAP_FAILED) {
    ::munmap(r, span + page_bytes());
    return nullptr;
  }
  // The exact size, so AddressSanitizer reports a kernel that runs past the end of a buffer; past the page the
  // guard faults in any build. The range may have been another mapping's (a thread's or fiber's stack, unmapped
  // with its frames' poison still in the shadow): cleared first.
  PB_EMU_UNPOISON(r, bytes);
  PB_EMU_POISON(static_cast<char*>(r) + bytes, span - bytes);
  return r;
}

void unmap_device_range(void* p, std::size_t bytes, bool release_pages, std::uint64_t offset) {
  const std::size_t span = heap_span(bytes);
  PB_EMU_UNPOISON(p, span);
  ::munmap(p, span + page_bytes());
  if (release_pages)
    (void)::fallocate(memory_file().fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(offset), off_t(span));
}

void reserve_device_range(void* p, std::size_t bytes) {
  PB_EMU_UNPOISON(p, heap_span(bytes));
  (void)::mmap(p, heap_span(bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

}  // namespace parbench::gpu_emu
