// What a host thread did for its device, counted in product code so that a run on a GPU reports it as a run on the
// emulated GPU does: how often it blocked on device work, how many kernels and library calls it launched, and how
// often it reached the raw device allocator (cudaMalloc). bench_train reports them per step.
#pragma once
#include <cstdint>

namespace parbench {

struct HostCounts {
  std::int64_t host_waits = 0;      // stream/event/device synchronisations, synchronous copies, NCCL waits
  std::int64_t launches = 0;        // kernels of our ops and library calls (cuBLAS) on a GPU
  std::int64_t device_mallocs = 0;  // raw device allocations (the caching pool's misses)

  HostCounts operator-(const HostCounts& o) const {
    return {host_waits - o.host_waits, launches - o.launches, device_mallocs - o.device_mallocs};
  }
};

// The calling thread's counts so far.
HostCounts& host_counts();
inline void count_host_wait() { ++host_counts().host_waits; }
inline void count_launch() { ++host_counts().launches; }
inline void count_device_malloc() { ++host_counts().device_mallocs; }

}  // namespace parbench
