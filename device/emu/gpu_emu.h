// What the emulated GPU tells its tests: API counts per host thread and per NVTX range (as nsys's API summary
// would), so a test can say "a steady-state step makes no cudaMalloc" or "a timed batch waits on the host once".
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace parbench::gpu_emu {

enum class Count {
  malloc,        // cudaMalloc
  free,          // cudaFree
  host_malloc,   // cudaMallocHost
  host_free,     // cudaFreeHost
  device_sync,   // cudaDeviceSynchronize, and the implicit one in cudaFree
  stream_sync,   // cudaStreamSynchronize
  event_sync,    // cudaEventSynchronize
  host_wait,     // every time the host thread blocked on device work (all of the above, synchronous copies, ...)
  launch,        // kernel launches
  copy,          // cudaMemcpy* calls
  pageable_copy,  // those between a GPU and pageable host memory (staged by the driver, never asynchronous)
  memset,        // cudaMemset* calls
  library_call,  // cuBLAS and NCCL calls that queue device work
  legacy_stream,  // calls that queue work on, wait for or implicitly use a legacy default stream (stream 0)
  ipc_open,      // cudaIpcOpenMemHandle calls
  graph_launch,  // cudaGraphLaunch calls
  kCount
};
const char* count_name(Count c);

struct ApiCounts {
  std::array<std::int64_t, std::size_t(Count::kCount)> n{};
  std::int64_t operator[](Count c) const { return n[std::size_t(c)]; }
};
// Everything the calling thread did so far.
ApiCounts thread_counts();

// A finished NVTX range (pushed and popped on one thread) and what its thread did inside it.
struct RegionRecord {
  std::string name;  // the range's message, e.g. "step microbatch=3"
  int thread = 0;    // small id of the host thread, in order of first use
  // Positions of the push and the pop in one process-wide sequence of pushes and pops, so ranges of different
  // threads can be ordered: a range on a communication thread lies inside a step when it began after the step
  // began and ended before the step ended.
  std::int64_t begin = 0, end = 0;
  ApiCounts counts;
};
std::vector<RegionRecord> finished_regions();
// NCCL communicators made and not yet destroyed or aborted in this process (a test can find leaked ones).
int nccl_comms_alive();
void region_push(const char* name);
void region_pop();

// The stream-ordering hazard checker (device/emu/hazards.h): PARBENCH_EMU_HAZARDS=abort (the default) prints a
// conflict between two operations that nothing orders and aborts; report prints it and goes on; off checks nothing.
enum class HazardMode { abort, report, off };
// For tests: a mode other than the environment's from now on, and the reports so far (taken: the list empties).
void set_hazard_mode(HazardMode mode);
std::vector<std::string> take_hazard_reports();

// The extents of the tensors an op hands its kernels, declared by the op (kernels/dispatch.h) before it launches
// them, so the checker counts a pointer argument's bytes from the tensor that starts there instead of up to its
// allocation's end. operand_mark() before the declarations, release_operands(mark) after the launches.
std::size_t operand_mark();
void declare_operand(const void* p, std::size_t bytes);
void release_operands(std::size_t mark);

}  // namespace parbench::gpu_emu

// For the NVTX tool (device/emu/nvtx_tool.cpp), which finds them with dlsym in the program.
extern "C" void parbench_emu_region_push(const char* name);
extern "C" void parbench_emu_region_pop();
