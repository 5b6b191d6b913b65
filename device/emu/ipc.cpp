// CUDA IPC on the emulated GPUs: cudaIpcGetMemHandle names an allocation by (process, memory file descriptor,
// offset, size, serial); cudaIpcOpenMemHandle in another process maps the same pages of the exporter's memory file
// through /proc/<pid>/fd/<fd> as device memory of its current GPU; cudaIpcCloseMemHandle unmaps it. An export table
// at the start of the memory file says which exported allocations are still live, so a handle of a freed
// allocation is refused.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "device/emu/device_heap.h"
#include "device/emu/emu.h"

namespace parbench::gpu_emu {
namespace {

// One entry of the export table, at slot * sizeof(ExportEntry) in the memory file. live == 0: a free slot.
struct ExportEntry {
  std::uint64_t serial, offset, size, live;
};
constexpr int kExportSlots = int(kExportTableBytes / sizeof(ExportEntry));

// What cudaIpcMemHandle_t's 64 bytes carry.
struct Handle {
  char magic[8];         // kMagic
  std::uint64_t nonce;   // the exporter's memory file (its name carries it)
  std::int32_t pid, fd;  // the exporter and its memory file's descriptor
  std::uint64_t offset, size, serial;  // the allocation: where it lies in the file, its bytes, its serial there
  std::int32_t slot;     // its entry in the export table
  std::int32_t device;   // the exporter's GPU (for messages)
};
static_assert(sizeof(Handle) <= sizeof(cudaIpcMemHandle_t));
constexpr char kMagic[8] = {'p', 'b', 'e', 'm', 'u', 'i', 'p', 'c'};

struct Exports {
  std::mutex m;
  std::vector<int> free_slots;
  int next_slot = 0;
};
Exports& exports() {
  static Exports* e = new Exports;  // never destroyed: allocations may be freed while the program exits
  return *e;
}

bool write_entry(int slot, const ExportEntry& e) {
  const off_t at = off_t(slot) * off_t(sizeof(ExportEntry));
  return ::pwrite(heap_fd(), &e, sizeof e, at) == ssize_t(sizeof e);
}

// Mappings this process opened, by exporter (pid, nonce) and serial: cudaIpcOpenMemHandle of a handle already
// open returns the same pointer and counts a reference, as CUDA does.
struct Opened {
  void* p;
  int refs;
};
struct Opens {
  std::mutex m;
  std::map<std::tuple<int, std::uint64_t, std::uint64_t>, Opened> by_handle;
};
Opens& opens() {
  static Opens* o = new Opens;
  return *o;
}

std::string exporter_name(const Handle& h) {
  return "allocation #" + std::to_string(h.serial) + " (" + std::to_string(h.size) + " bytes) of GPU " +
         std::to_string(h.device) + " in process " + std::to_string(h.pid);
}

// Opens the exporter's memory file; -1 with `why` set when the handle names no live export.
int open_exporter_file(const Handle& h, std::string* why) {
  const std::string link = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  char target[256] = {};
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  const std::string expect = "/memfd:parbench-emu-device-memory-" + std::to_string(h.nonce);
  if (n <= 0 || std::string(target, std::size_t(n)).rfind(expect, 0) != 0) {
    *why = "the exporting process is gone (" + link + " is not its device memory file)";
    return -1;
  }
  const int fd = ::open(link.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + link + ": " + std::strerror(errno);
    return -1;
  }
  ExportEntry e{};
  const off_t at = off_t(h.slot) * off_t(sizeof(ExportEntry));
  if (::pread(fd, &e, sizeof e, at) != ssize_t(sizeof e) || !e.live || e.serial != h.serial ||
      e.offset != h.offset || e.size != h.size) {
    ::close(fd);
    *why = "the allocation was freed (cudaFree) in the exporting process";
    return -1;
  }
  return fd;
}

}  // namespace

void unexport_slot(int slot) {
  Exports& x = exports();
  std::lock_guard<std::mutex> l(x.m);
  write_entry(slot, ExportEntry{});
  x.free_slots.push_back(slot);
}

}  // namespace parbench::gpu_emu

using namespace parbench::gpu_emu;

extern "C" {

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* p) {
  const std::string site = PB_EMU_SITE();
  if (!handle) return fail(cudaErrorInvalidValue, "cudaIpcGetMemHandle from " + site + " with a null handle pointer");
  auto a = find_allocation(p);
  if (!a || a->freed || a->kind != MemKind::device || !a->ipc_from.empty()) {
    const std::string what = !a ? "no allocation contains it"
                             : a->freed ? "it lies in " + describe(*a)
                             : a->kind != MemKind::device ? "it is pinned host memory: " + describe(*a)
                                                          : "it is an IPC mapping, which cannot be exported again: " +
                                                                describe(*a);
    return fail(cudaErrorInvalidValue, "cudaIpcGetMemHandle from " + site + " of a pointer that is not cudaMalloc " +
                                           "memory of this process: " + what);
  }
  int slot = a->export_slot;
  if (slot < 0) {
    Exports& x = exports();
    std::lock_guard<std::mutex> l(x.m);  // one slot per allocation, however many threads export it at once
    a = find_allocation(p);
    if (!a || a->freed) return fail(cudaErrorInvalidValue, "cudaIpcGetMemHandle from " + site + ": freed meanwhile");
    slot = a->export_slot;
    if (slot < 0 && !x.free_slots.empty()) {
      slot = x.free_slots.back();
      x.free_slots.pop_back();
    } else if (slot < 0 && x.next_slot < kExportSlots) {
      slot = x.next_slot++;
    }
    if (slot < 0)
      return fail(cudaErrorMemoryAllocation, "cudaIpcGetMemHandle from " + site + ": more than " +
                                                 std::to_string(kExportSlots) + " allocations exported at once");
    if (a->export_slot < 0) {
      if (!write_entry(slot, ExportEntry{a->serial, a->heap_offset, a->size, 1}))
        return fail(cudaErrorMapBufferObjectFailed, "cudaIpcGetMemHandle: cannot write the export table");
      set_export_slot(a->base, slot);
    }
  }
  Handle h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.nonce = heap_nonce();
  h.pid = std::int32_t(::getpid());
  h.fd = heap_fd();
  h.offset = a->heap_offset, h.size = a->size, h.serial = a->serial;
  h.slot = slot;
  h.device = a->device;
  *handle = cudaIpcMemHandle_t{};
  std::memcpy(handle, &h, sizeof h);
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void** out, cudaIpcMemHandle_t handle, unsigned int flags) {
  const std::string site = PB_EMU_SITE();
  count(Count::ipc_open);
  if (!out) return fail(cudaErrorInvalidValue, "cudaIpcOpenMemHandle from " + site + " with a null pointer");
  *out = nullptr;
  if (flags & ~unsigned(cudaIpcMemLazyEnablePeerAccess))
    return fail(cudaErrorInvalidValue, "cudaIpcOpenMemHandle flags " + std::to_string(flags) +
                                           ": accepted are 0 and cudaIpcMemLazyEnablePeerAccess");
  Handle h;
  std::memcpy(&h, &handle, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.slot < 0 || h.slot >= kExportSlots || h.pid <= 0)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaIpcOpenMemHandle from " + site + ": not a handle cudaIpcGetMemHandle made");
  if (h.pid == ::getpid())
    return fail(cudaErrorDeviceUninitialized, "cudaIpcOpenMemHandle from " + site + " of " + exporter_name(h) +
                                                  ": a handle cannot be opened in the process that exported it");
  const int dev = current_device();
  if (cudaError_t e = sticky(dev); e != cudaSuccess) return e;
  Opens& o = opens();
  std::lock_guard<std::mutex> l(o.m);
  const auto key = std::make_tuple(int(h.pid), h.nonce, h.serial);
  if (auto it = o.by_handle.find(key); it != o.by_handle.end()) {
    ++it->second.refs;
    *out = it->second.p;
    return cudaSuccess;
  }
  std::string why;
  const int fd = open_exporter_file(h, &why);
  if (fd < 0)
    return fail(cudaErrorMapBufferObjectFailed, "cudaIpcOpenMemHandle from " + site + " of " + exporter_name(h) +
                                                    ": " + why);
  void* p = map_device_file(fd, h.offset, std::size_t(h.size));
  ::close(fd);  // the mapping keeps the file
  if (!p) return fail(cudaErrorMapBufferObjectFailed, "cudaIpcOpenMemHandle: mmap of " + exporter_name(h) + " failed");
  add_ipc_mapping(p, std::size_t(h.size), dev, exporter_name(h), site);
  o.by_handle[key] = Opened{p, 1};
  *out = p;
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void* p) {
  const std::string site = PB_EMU_SITE();
  Opens& o = opens();
  std::unique_lock<std::mutex> l(o.m);
  for (auto it = o.by_handle.begin(); it != o.by_handle.end(); ++it) {
    if (it->second.p != p) continue;
    if (--it->second.refs > 0) return cudaSuccess;
    o.by_handle.erase(it);
    l.unlock();
    remove_ipc_mapping(p, site);
    return cudaSuccess;
  }
  return fail(cudaErrorInvalidValue, "cudaIpcCloseMemHandle from " + site +
                                         " of a pointer that no open cudaIpcOpenMemHandle returned");
}

}  // extern "C"
