// Memory of the emulated GPUs: cudaMalloc/cudaFree/cudaMallocHost with per-device capacity (device memory mapped
// from the process's memory file, device_heap.cpp), the registry that names the allocation behind any address (IPC
// mappings included), and strict mode (PARBENCH_EMU_STRICT=1), where device memory
// carries a memory protection key that only the emulator's threads may use, so a host thread that
// dereferences device memory stops with the allocation named.
#include <signal.h>
#include <sys/ucontext.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "device/emu/device_heap.h"
#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"
#include "device/emu/settings.h"

namespace parbench::simt::detail {
void set_block_thread_hook(void (*hook)());  // device/simt/simt_runtime.h, whose CUDA names clash with the real headers
}

namespace parbench::gpu_emu {
namespace {

struct Registry {
  std::mutex m;
  std::map<std::uintptr_t, Allocation> live;  // by base address
  // Freed allocations stay reserved for a while (newest first), so that their addresses are not handed to host
  // allocations at once: a later use is then reported as use of freed memory, and host memory never is.
  std::deque<Allocation> freed;
  std::size_t freed_bytes = 0;
  std::vector<std::size_t> used;              // bytes per device
  std::uint64_t serial = 0;
};
Registry& registry() {
  static Registry* r = [] {
    auto* x = new Registry;  // never destroyed: memory may be freed while the program exits
    x->used.assign(std::size_t(device_count()), 0);
    return x;
  }();
  return *r;
}
constexpr std::size_t kFreedKept = 4096;
constexpr std::size_t kFreedBytesKept = std::size_t(256) << 20;

// ---- strict mode
int g_pkey = -1;
struct sigaction g_previous_segv;

std::optional<Allocation> find_locked(Registry& r, std::uintptr_t a) {
  auto it = r.live.upper_bound(a);
  if (it != r.live.begin()) {
    --it;
    if (a <= it->first + it->second.size) return it->second;
  }
  for (const Allocation& f : r.freed)
    if (a >= f.base && a < f.base + f.size) return f;
  return std::nullopt;
}

void on_segv(int sig, siginfo_t* info, void* ctx) {
#ifdef SEGV_PKUERR
  if (info->si_code == SEGV_PKUERR && pinned_guard_key() >= 0 && int(info->si_pkey) == pinned_guard_key()) {
    const auto* uc = static_cast<const ucontext_t*>(ctx);
    const bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;  // the page fault's error code: a write
    if (pinned_guard_fault(info->si_addr, write)) return;          // the access runs again, let through
  }
  if (info->si_code == SEGV_PKUERR) {
    char buf[1024];
    int n = std::snprintf(buf, sizeof buf,
                          "parbench-emu: a host thread dereferenced device memory at %p (strict mode: only device "
                          "work may touch it; copy it with cudaMemcpy first)\n",
                          info->si_addr);
    (void)!::write(2, buf, std::size_t(n));
    Registry& r = registry();
    if (r.m.try_lock()) {
      if (auto a = find_locked(r, reinterpret_cast<std::uintptr_t>(info->si_addr))) {
        std::string d = "  it lies in " + describe(*a) + "\n";
        (void)!::write(2, d.data(), d.size());
      }
      r.m.unlock();
    }
    ::signal(SIGABRT, SIG_DFL);
    std::abort();
  }
#endif
  // Not ours: hand it to the handler that was there before (the simt stack guard, sanitizers, or the default).
  if (g_previous_segv.sa_flags & SA_SIGINFO) return g_previous_segv.sa_sigaction(sig, info, ctx);
  if (g_previous_segv.sa_handler == SIG_DFL || g_previous_segv.sa_handler == SIG_IGN) {
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
    return;
  }
  g_previous_segv.sa_handler(sig);
}

void install_segv_handler() {
  static const bool done = [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &g_previous_segv);
    simt::detail::set_block_thread_hook(allow_device_access_on_this_thread);
    return true;
  }();
  (void)done;
}

bool strict_mode() {
  static const bool on = [] {
    if (!settings().strict) return false;
    g_pkey = ::pkey_alloc(0, PKEY_DISABLE_ACCESS);
    if (g_pkey < 0) {
      std::fprintf(stderr, "parbench-emu: PARBENCH_EMU_STRICT=1 needs memory protection keys (pkey_alloc: %s)\n",
                   std::strerror(errno));
      std::exit(2);
    }
    install_segv_handler();
    return true;
  }();
  return on;
}

void* raw_alloc(std::size_t bytes, bool device, std::uint64_t* offset) {
  if (device) {
    void* p = heap_alloc(bytes, offset);
    if (!p) return nullptr;
    // Fresh device memory is not zero on a GPU either: NaN bytes make a read of unwritten memory show. Written
    // before the key goes on, while this (host) thread may still write it.
    std::memset(p, 0xff, bytes);
    if (strict_mode()) ::pkey_mprotect(p, heap_span(bytes), PROT_READ | PROT_WRITE, g_pkey);
    return p;
  }
  void* p = nullptr;
  // The exact size, so AddressSanitizer reports a kernel that runs past the end of a buffer; with the pinned
  // guards (hazards.h), whole pages of its own, which the guards' key may cover without touching other memory.
  if (pinned_guard_key() >= 0) {
    const std::size_t page = 4096, span = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
    return ::posix_memalign(&p, page, span) == 0 ? p : nullptr;
  }
  if (::posix_memalign(&p, 256, std::max<std::size_t>(bytes, 1)) != 0) return nullptr;
  return p;
}

void raw_free(const Allocation& a) {
  void* p = reinterpret_cast<void*>(a.base);
  if (a.kind == MemKind::device)
    unmap_device_range(p, a.size, a.ipc_from.empty(), a.heap_offset);
  else
    std::free(p);
}

// cudaFree and cudaFreeHost wait for the device's work, and with peer access for the peers' too.
void implicit_sync(int device) {
  std::vector<OpPtr> ops = device_tail(device);
  for (int d = 0; d < device_count(); ++d)
    if (d != device && (peer_enabled(device, d) || peer_enabled(d, device))) {
      auto more = device_tail(d);
      ops.insert(ops.end(), more.begin(), more.end());
    }
  count(Count::device_sync);
  wait_ops(ops, "cudaFree's implicit synchronisation");
  for (int d = 0; d < device_count(); ++d)
    if (d == device || peer_enabled(device, d) || peer_enabled(d, device)) host_observes_device(d);
}

cudaError_t allocate(void** out, std::size_t bytes, MemKind kind, std::string site) {
  if (!out) return fail(cudaErrorInvalidValue, "a null pointer to store the allocation in");
  start_pinned_guards();
  *out = nullptr;
  const int dev = kind == MemKind::device ? current_device() : -1;
  if (dev >= 0 && sticky(dev) != cudaSuccess) return sticky(dev);
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> l(r.m);
    if (dev >= 0 && r.used[std::size_t(dev)] + bytes > settings().memory_bytes)
      return fail(cudaErrorMemoryAllocation,
                  "cudaMalloc of " + std::to_string(bytes) + " bytes on GPU " + std::to_string(dev) + " from " + site +
                      ": " + std::to_string(r.used[std::size_t(dev)]) + " of " +
                      std::to_string(settings().memory_bytes) + " bytes in use (PARBENCH_EMU_GPU_MEMORY)");
  }
  std::uint64_t offset = 0;
  void* p = raw_alloc(bytes, kind == MemKind::device, &offset);
  if (!p) return fail(cudaErrorMemoryAllocation, "the host has no memory for " + std::to_string(bytes) + " bytes");
  std::lock_guard<std::mutex> l(r.m);
  Allocation a{reinterpret_cast<std::uintptr_t>(p), bytes, kind, dev, ++r.serial, std::move(site), false, offset, -1,
               ""};
  r.live[a.base] = a;
  if (dev >= 0) r.used[std::size_t(dev)] += bytes;
  *out = p;
  return cudaSuccess;
}

// Keeps a released allocation among the freed ones (its range stays reserved) and lets the oldest go. r.m held.
void retire_locked(Registry& r, Allocation a, const std::string& how) {
  a.freed = true;
  a.site += how;
  r.freed.push_front(a);
  r.freed_bytes += a.size;
  while (r.freed.size() > kFreedKept || r.freed_bytes > kFreedBytesKept) {
    raw_free(r.freed.back());
    r.freed_bytes -= r.freed.back().size;
    r.freed.pop_back();
  }
}

cudaError_t release(void* p, MemKind kind, const char* api, std::string site) {
  if (!p) return cudaSuccess;
  Registry& r = registry();
  Allocation a;
  {
    std::lock_guard<std::mutex> l(r.m);
    auto it = r.live.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == r.live.end() || it->second.kind != kind) {
      auto f = find_locked(r, reinterpret_cast<std::uintptr_t>(p));
      std::string what = !f ? "no allocation of this kind starts there"
                         : f->freed ? "it was already freed: " + describe(*f)
                         : f->kind != kind ? "it is " + describe(*f) + ", which " + api + " does not free"
                                           : "it points inside " + describe(*f) + ", not at its start";
      return fail(cudaErrorInvalidValue, std::string(api) + " from " + site + " of " + std::to_string(reinterpret_cast<std::uintptr_t>(p)) + ": " + what);
    }
    a = it->second;
  }
  if (!a.ipc_from.empty())
    return fail(cudaErrorInvalidValue, std::string(api) + " from " + site + " of " + describe(a) +
                                           ": close it with cudaIpcCloseMemHandle");
  implicit_sync(a.device >= 0 ? a.device : current_device());
  forget_accesses(a.serial);
  if (a.export_slot >= 0) unexport_slot(a.export_slot);
  std::lock_guard<std::mutex> l(r.m);
  r.live.erase(a.base);
  if (a.device >= 0) r.used[std::size_t(a.device)] -= a.size;
  retire_locked(r, a, ", freed from " + site);
  return cudaSuccess;
}

}  // namespace

std::optional<Allocation> find_allocation(const void* p) {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.m);
  return find_locked(r, reinterpret_cast<std::uintptr_t>(p));
}

std::string describe(const Allocation& a) {
  std::string where = a.kind == MemKind::device ? "cudaMalloc on GPU " + std::to_string(a.device) : "cudaMallocHost";
  if (!a.ipc_from.empty()) where = "cudaIpcOpenMemHandle on GPU " + std::to_string(a.device) + " of " + a.ipc_from;
  return std::string(a.freed ? "freed " : "") + "allocation #" + std::to_string(a.serial) + " of " +
         std::to_string(a.size) + " bytes (" + where + " from " + a.site + ")";
}

std::string device_access_problem(int device, const void* p, std::size_t bytes) {
  auto a = find_allocation(p);
  if (!a) return "pageable host memory (no cudaMalloc or cudaMallocHost allocation contains it)";
  if (a->freed) return "freed memory: " + describe(*a);
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p);
  if (at + bytes > a->base + a->size)
    return std::to_string(bytes) + " bytes from offset " + std::to_string(at - a->base) + " run past the end of " +
           describe(*a);
  if (a->kind == MemKind::device && a->device != device && !peer_enabled(device, a->device))
    return "memory of GPU " + std::to_string(a->device) + " (" + describe(*a) + "), and peer access from GPU " +
           std::to_string(device) + " is not enabled (cudaDeviceEnablePeerAccess)";
  return "";
}

void set_export_slot(std::uintptr_t base, int slot) {
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.m);
  if (auto it = r.live.find(base); it != r.live.end()) it->second.export_slot = slot;
}

void add_ipc_mapping(void* p, std::size_t bytes, int device, const std::string& from, const std::string& site) {
  if (strict_mode()) ::pkey_mprotect(p, heap_span(bytes), PROT_READ | PROT_WRITE, g_pkey);
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.m);
  Allocation a{reinterpret_cast<std::uintptr_t>(p), bytes, MemKind::device, device, ++r.serial, site, false, 0, -1,
               from};
  r.live[a.base] = a;
}

void remove_ipc_mapping(void* p, const std::string& site) {
  Registry& r = registry();
  Allocation a;
  {
    std::lock_guard<std::mutex> l(r.m);
    auto it = r.live.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == r.live.end()) return;
    a = it->second;
  }
  check_unmap(a, "cudaIpcCloseMemHandle from " + site);
  implicit_sync(a.device);  // so that, the hazard reported and run on, nothing queued touches the unmapped bytes
  forget_accesses(a.serial);
  reserve_device_range(p, a.size);
  std::lock_guard<std::mutex> l(r.m);
  r.live.erase(a.base);
  retire_locked(r, a, ", closed from " + site);
}

void allow_device_access_on_this_thread() {
  if (strict_mode()) ::pkey_set(g_pkey, 0);
  if (pinned_guard_key() >= 0) ::pkey_set(pinned_guard_key(), 0);
}

void start_pinned_guards() {
  static const bool started = [] {
    init_pinned_guards();
    if (pinned_guard_key() >= 0) install_segv_handler();
    return true;
  }();
  (void)started;
}

}  // namespace parbench::gpu_emu

using namespace parbench::gpu_emu;

extern "C" {

cudaError_t cudaMalloc(void** p, size_t bytes) {
  count(Count::malloc);
  if (cudaError_t e = capture_forbids("cudaMalloc", PB_EMU_SITE()); e != cudaSuccess) return e;
  return allocate(p, bytes, MemKind::device, PB_EMU_SITE());
}
cudaError_t cudaFree(void* p) {
  count(Count::free);
  if (cudaError_t e = capture_forbids("cudaFree", PB_EMU_SITE()); e != cudaSuccess) return e;
  return release(p, MemKind::device, "cudaFree", PB_EMU_SITE());
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  count(Count::host_malloc);
  if (cudaError_t e = capture_forbids("cudaMallocHost", PB_EMU_SITE()); e != cudaSuccess) return e;
  return allocate(p, bytes, MemKind::pinned_host, PB_EMU_SITE());
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  count(Count::host_malloc);
  if (cudaError_t e = capture_forbids("cudaHostAlloc", PB_EMU_SITE()); e != cudaSuccess) return e;
  return allocate(p, bytes, MemKind::pinned_host, PB_EMU_SITE());
}
cudaError_t cudaFreeHost(void* p) {
  count(Count::host_free);
  if (cudaError_t e = capture_forbids("cudaFreeHost", PB_EMU_SITE()); e != cudaSuccess) return e;
  return release(p, MemKind::pinned_host, "cudaFreeHost", PB_EMU_SITE());
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (!free_bytes || !total) return fail(cudaErrorInvalidValue, "cudaMemGetInfo with a null pointer");
  Registry& r = registry();
  std::lock_guard<std::mutex> l(r.m);
  *total = settings().memory_bytes;
  *free_bytes = *total - r.used[std::size_t(current_device())];
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  if (!attr) return fail(cudaErrorInvalidValue, "cudaPointerGetAttributes with a null attributes pointer");
  *attr = cudaPointerAttributes{};
  auto a = find_allocation(p);
  if (!a || a->freed) {
    attr->type = cudaMemoryTypeUnregistered;
    attr->device = -2;
    attr->hostPointer = const_cast<void*>(p);
    return cudaSuccess;
  }
  if (a->kind == MemKind::device) {
    attr->type = cudaMemoryTypeDevice;
    attr->device = a->device;
    attr->devicePointer = const_cast<void*>(p);
  } else {
    attr->type = cudaMemoryTypeHost;
    attr->device = current_device();
    attr->devicePointer = attr->hostPointer = const_cast<void*>(p);
  }
  return cudaSuccess;
}

}  // extern "C"
