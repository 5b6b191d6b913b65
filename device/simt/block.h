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
  bool resident = false;  // co_resident(*spec): every block runs at once
  // Called when a block's threads start to spin (a round in which all only yielded): a co-resident launch gets
  // another OS thread for its blocks not yet started.
  void (*on_spin)(void*) = nullptr;
  void* spin_ctx = nullptr;
};

// Runs block number `block_linear` (x fastest) of the launch to completion on this OS thread.
// Aborts the process on deadlock, divergent barriers and stack overflow; rethrows the first
// exception a thread of the block threw.
void run_block(const LaunchState& launch, std::uint64_t block_linear);

// Suspends the calling kernel thread until the scheduler's next round (it stays runnable); false outside a kernel.
bool yield_fiber();

// progress.cpp: the pauses of a block whose threads all spin (`idle_rounds` consecutive rounds so far), and the
// interleaving fuzz's pause before a block of a co-resident grid starts.
void pause_spinning_block(int idle_rounds);
void fuzz_block_start(const LaunchState& launch, std::uint64_t block_linear);

}  // namespace parbench::simt::detail
