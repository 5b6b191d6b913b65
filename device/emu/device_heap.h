// Device memory of the emulated GPUs lives in one memory file (memfd) per process, so that another process can map
// an allocation (CUDA IPC, ipc.cpp); and what IPC needs from the allocation registry (gpu_memory.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "device/emu/emu.h"

namespace parbench::gpu_emu {

// ---- the memory file (device_heap.cpp)
// The file's first kExportTableBytes hold the export table (ipc.cpp); allocations lie after it.
constexpr std::uint64_t kExportTableBytes = 128 * 1024;
int heap_fd();                // this process's memory file, created on first use (close-on-exec)
std::uint64_t heap_nonce();   // a random number its name carries, so an opener can tell the file from another
std::string heap_file_name();  // "parbench-emu-device-memory-<nonce>"
std::size_t heap_span(std::size_t bytes);  // bytes rounded up to whole pages (at least one)
// Maps `bytes` at a fresh offset of the memory file, followed by a PROT_NONE guard page; nullptr when the host has
// no memory. The bytes between `bytes` and the page end are poisoned for AddressSanitizer.
void* heap_alloc(std::size_t bytes, std::uint64_t* offset);
// Maps [offset, offset + bytes) of memory file `fd` (this process's or another's) the same way; nullptr on failure.
void* map_device_file(int fd, std::uint64_t offset, std::size_t bytes);
// Unmaps what heap_alloc or map_device_file mapped; `release_pages` also gives this process's file pages back.
void unmap_device_range(void* p, std::size_t bytes, bool release_pages, std::uint64_t offset);
// Turns a mapping into an inaccessible reservation of the same range (a closed IPC mapping stays reserved, so its
// addresses are not reused while it is remembered among the freed allocations).
void reserve_device_range(void* p, std::size_t bytes);

// ---- the registry's side of IPC (gpu_memory.cpp)
// Records that the allocation based at `base` is exported in slot `slot` of the export table.
void set_export_slot(std::uintptr_t base, int slot);
// Registers an opened IPC mapping as device memory of `device` (what the opening GPU may touch); `from` names the
// exporter for diagnostics. Applies strict mode's memory key.
void add_ipc_mapping(void* p, std::size_t bytes, int device, const std::string& from, const std::string& site);
// Waits for the GPU's work, as cudaFree does, then forgets the mapping (kept among the freed allocations, its range
// an inaccessible reservation until it ages out).
void remove_ipc_mapping(void* p, const std::string& site);

// ---- the export table (ipc.cpp): called by cudaFree for an allocation that was exported
void unexport_slot(int slot);

}  // namespace parbench::gpu_emu
