// simt internals: running one thread block -- its fibers, barriers and warp collectives.
#pragma once
#include <cstddef>
#include <cstdint>

#include "device/simt/simt_runtime.h"

namespace parbench::simt::detail {

struct LaunchState {
  const LaunchSpec* spec;
  void (*body)(void*);
  void* ctx;
  Schedule schedule;
  std::size_t stack_bytes;
};

// Runs block number `block_linear` (x fastest) of the launch to completion on this OS thread.
// Aborts the process on deadlock, divergent barriers and stack overflow; rethrows the first
// exception a thread of the block threw.
void run_block(const LaunchState& launch, std::uint64_t block_linear);

}  // namespace parbench::simt::detail
