// The emulated GPU's internals shared by its files: errors, devices, allocations, streams of operations,
// and API counters. Everything here sits behind the CUDA runtime, cuBLAS and NCCL APIs (see README.md).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/emu/gpu_emu.h"
#include "device/emu/hazards.h"

namespace parbench::gpu_emu {

// ---- errors
// Makes `e` the calling thread's last error, remembers `detail` for cudaGetErrorString(e), and returns e.
cudaError_t fail(cudaError_t e, const std::string& detail);
// cudaErrorInvalidResourceHandle for `api` given a handle that is not a live stream of this process.
cudaError_t bad_stream(const char* api);
// A fault in device work (a kernel threw, an illegal address): every later call on the device returns it.
void set_sticky(int device, cudaError_t e, const std::string& detail);
cudaError_t sticky(int device);
// The caller of the API function that called this, as "function+offset" (for diagnostics).
std::string call_site(const void* return_address);
#define PB_EMU_SITE() ::parbench::gpu_emu::call_site(__builtin_return_address(0))

// ---- devices
int device_count();
int current_device();  // per host thread; a new thread starts on device 0
bool peer_enabled(int from, int to);

// ---- allocations
enum class MemKind { device, pinned_host };
struct Allocation {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  MemKind kind = MemKind::device;
  int device = -1;  // -1 for pinned host memory
  std::uint64_t serial = 0;
  std::string site;    // who allocated it
  bool freed = false;  // found among recently freed allocations
  std::uint64_t heap_offset = 0;  // device memory: where it lies in the process's memory file (device_heap.h)
  int export_slot = -1;           // its entry in the export table once cudaIpcGetMemHandle exported it
  std::string ipc_from;           // a mapping cudaIpcOpenMemHandle made: the exporter's allocation; "" otherwise
};
// The allocation (live, else recently freed) that contains address p; nullopt for memory no allocation covers
// (pageable host memory, or freed long ago).
std::optional<Allocation> find_allocation(const void* p);
std::string describe(const Allocation& a);
// Why device `device` may not touch [p, p + bytes) from a kernel or a copy engine ("" when it may): pageable host
// memory, freed memory, another GPU without peer access, or a range past the allocation's end. `bytes` 0 checks
// only the address (a kernel pointer argument, whose extent is unknown).
std::string device_access_problem(int device, const void* p, std::size_t bytes);
// Gives the calling thread access to device memory in strict mode and to guarded pinned memory (stream workers,
// simt block threads, before each piece of work).
void allow_device_access_on_this_thread();
// Allocates the pinned guards' key (hazards.h) once, before the first stream's thread or allocation.
void start_pinned_guards();

// ---- streams: each stream runs its operations in order on its own worker thread
struct Op;
using OpPtr = std::shared_ptr<Op>;
struct StreamState;
// The stream behind a handle; nullptr or cudaStreamLegacy is the current device's legacy default stream.
// Returns nullptr for an invalid or destroyed handle.
StreamState* resolve_stream(cudaStream_t s);
int stream_device(const StreamState* s);
bool is_legacy_stream(const StreamState* s);
// Notes that `api`, called from `site`, queues work on, waits for or implicitly uses the legacy default stream of
// GPU `device`: counts it (Count::legacy_stream) and, under PARBENCH_EMU_LEGACY_STREAM=error, prints the API, the
// GPU and the site and aborts.
void legacy_stream_used(int device, const std::string& api, const std::string& site);
// resolve_stream for an API that queues work on the stream, waits for it or uses it implicitly (a synchronous
// copy is given nullptr): a legacy default stream is noted with legacy_stream_used.
StreamState* work_stream(cudaStream_t s, const char* api, const std::string& site);
// A kernel's or a GEMM's work, made PARBENCH_EMU_KERNEL_DELAY_US longer on its stream's worker.
std::function<void()> kernel_work(std::function<void()> work);
// Queues `work` on `s` after everything CUDA orders before it (the stream's earlier work; for the legacy stream
// the work queued on the device's blocking streams, and for a blocking stream the legacy stream's) and after
// `extra` ops. A `work` that throws makes the device's error sticky with the exception's message. `accesses`, the
// memory the work touches, go to the hazard checker (hazards.h) with `site`, the API's caller, in its reports.
OpPtr enqueue(StreamState* s, std::string what, std::function<void()> work, std::vector<OpPtr> extra = {},
              std::vector<MemAccess> accesses = {}, std::string site = {});
// Blocks the calling host thread until `op` finished (one counted host wait); aborts with the device's pending
// work listed after PARBENCH_EMU_WAIT_TIMEOUT seconds (default 600) instead of hanging.
void wait_op(const OpPtr& op, const char* why);
bool op_done(const OpPtr& op);
// PARBENCH_EMU_WAIT_TIMEOUT in seconds (default 600): how long any emulated wait may last before it is reported.
double wait_timeout_s();
// Last op queued on each stream of `device`, destroyed streams' not yet done included (what cudaDeviceSynchronize
// waits for).
std::vector<OpPtr> device_tail(int device);
// After waiting for device_tail(device): the calling host thread has seen the destroyed streams' work too.
void host_observes_device(int device);
OpPtr stream_tail(StreamState* s);

// ---- stream capture (graphs.cpp): while a stream captures (cudaStreamBeginCapture), the work meant for it is
// recorded in its graph instead of queued; each cudaGraphLaunch queues every recorded node on the launch stream.
// How a recorded node queues its work on the launch stream, once per launch.
using Reissue = std::function<void(StreamState* launch_stream)>;
// Records a node made of `what` and `reissue` when `s` captures (true); false when it does not. Work for a capture
// already invalidated is dropped (true) with cudaErrorStreamCaptureInvalidated as the thread's last error.
bool record_if_capturing(StreamState* s, const std::string& what, Reissue reissue);
// The id of the capture `s` takes part in (0: none), and whether capture `id` is still going on.
unsigned long long capture_id(StreamState* s);
bool capture_live(unsigned long long id);
// Ends capture `id` as failed: cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated naming `why`.
void invalidate_capture(unsigned long long id, const std::string& why);
// For the calls CUDA forbids to a thread while a capture it must respect goes on (cudaMalloc, cudaFree, a
// synchronous copy or fill, cudaDeviceSynchronize, ...): cudaErrorStreamCaptureUnsupported naming `api`, `site` and
// the capture (which it invalidates, as CUDA does); cudaSuccess when none.
cudaError_t capture_forbids(const char* api, const std::string& site);
// `api` on stream `s` (a synchronisation or a query) while `s` captures: cudaErrorStreamCaptureUnsupported, the
// capture invalidated; cudaSuccess otherwise.
cudaError_t refuse_on_capturing(StreamState* s, const char* api);
// Work queued on the legacy default stream of `device` while a blocking stream of it captures: CUDA's implicit
// dependency would join the capture, so the capture is invalidated and cudaErrorStreamCaptureImplicit set.
void legacy_work_during_capture(int device, const std::string& what);

// ---- counters: see gpu_emu.h
void count(Count c);
// Writes `s` as a JSON string (quoted, with quotes and backslashes escaped and control characters as spaces).
void write_json_string(std::FILE* f, const std::string& s);

}  // namespace parbench::gpu_emu
