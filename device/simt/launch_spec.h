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

}  // namespace parbench::simt::detail
