// What a kernel launch is (name, grid, block, dynamic shared memory, call site) and the call that runs one on the
// CPU: all that a launcher above simt needs, such as the emulated GPU's stream queue (device/emu/launch.h).
#pragma once
#include <cstddef>

#include "device/simt/simt_types.h"

namespace parbench::simt::detail {

struct LaunchSpec {
  const char* name;
  dim3 grid, block;
  std::size_t shared_bytes;
  const void* kernel;  // identifies the kernel for cudaFuncSetAttribute
  const char* file;
  int line;
};
// Runs every block of the grid and returns when all finished; throws parbench::Error on a bad
// configuration (before running anything) and rethrows the first exception a thread threw.
void launch(const LaunchSpec& spec, void (*body)(void*), void* ctx);
// The checks `launch` makes before running anything (limits, dynamic shared memory); throws parbench::Error.
void validate_launch(const LaunchSpec& spec);
// Called on a pool thread before it runs blocks of a launch (the emulated GPU's strict mode grants it access to
// device memory there).
void set_block_thread_hook(void (*hook)());

// Co-residency: a grid of at most kResidentBlocks blocks and kResidentThreads threads in all (an sm_90-like GPU of
// 4 SMs, 8 blocks and 2048 threads each) is co-resident: its blocks run on the PARBENCH_SIMT_THREADS pool, and each
// time one of them starts to spin (its threads all wait in __nanosleep or clock64) while blocks remain unstarted,
// another OS thread joins, so blocks that spin on flags other blocks or other kernels set always progress. A larger
// grid runs on the pool only, each block to completion before its thread takes the next: its blocks must not wait
// for one another (on a GPU too, a grid larger than what fits at once may deadlock that way).
constexpr unsigned kResidentBlocks = 32, kResidentThreads = 8192;
bool co_resident(const LaunchSpec& spec);

// The interleaving fuzz (the emulated GPU turns it on under PARBENCH_EMU_DELAY): one block in eight of a co-resident
// grid starts after a random pause, and a spinning block sometimes sleeps, so the order in which blocks of kernels on
// different GPUs reach memory varies with the seed. Off by default.
void set_interleave_fuzz(bool on, unsigned long long seed, unsigned max_us);

}  // namespace parbench::simt::detail
