// Flag synchronisation between GPUs for the device-side collectives' kernels (included by their .cu files):
// store-release and load-acquire at system scope, a bounded spin, and the block-wide barrier built on them.
// Flags are only ever touched through these: never a plain or volatile read.
#pragma once
#include "collectives/symm_kernels.h"
#include "device/cuda_compat.h"

namespace parbench::PB_KERNEL_NS {

__device__ inline void store_release_sys(unsigned* p, unsigned v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);  // what ThreadSanitizer understands as the same ordering
#endif
}

__device__ inline unsigned load_acquire_sys(const unsigned* p) {
#if defined(__CUDA_ARCH__)
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

// Nanoseconds of a clock every SM shares: on a GPU the global timer (clock64 counts one SM's cycles, at a rate
// that changes with the clock), under the emulator clock64, which counts nanoseconds.
__device__ inline unsigned long long symm_now_ns() {
#if defined(__CUDA_ARCH__)
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return (unsigned long long)clock64();
#endif
}

// Waits until *flag has reached `value` (serial-number order, so the count may wrap); false once `deadline`
// (symm_now_ns) has passed first.
__device__ inline bool symm_wait_flag(const unsigned* flag, unsigned value, unsigned long long deadline) {
  while (int(load_acquire_sys(flag) - value) < 0) {
    if (symm_now_ns() > deadline) return false;
    __nanosleep(100);
  }
  return true;
}

__device__ inline void symm_record_fault(const SymmPeers& p, int missing, unsigned phase) {
  SymmFault* f = p.faults + blockIdx.x;
  store_release_sys(&f->base, p.base);
  store_release_sys(&f->phase, phase);
  store_release_sys(&f->missing, unsigned(missing + 1));
}

// Every thread of the block calls it: the block's writes so far are published, thread 0 sets this block's flag
// on every peer to base + phase and waits for every peer's same block to set its flag here. False (a fault
// recorded, naming the first peer that did not arrive) when one did not arrive before `deadline`: the block must
// then return. `wait` false skips the waiting (the planted race of the tests only).
__device__ inline bool symm_barrier(const SymmPeers& p, unsigned phase, unsigned long long deadline,
                                    bool wait = true) {
  __shared__ int failed;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned value = p.base + phase;
    const unsigned slot = blockIdx.x * unsigned(kSymmMaxRanks);
    __threadfence_system();
    for (int q = 0; q < p.ranks; ++q)
      if (q != p.rank) store_release_sys(p.signals[q] + slot + unsigned(p.rank), value);
    failed = 0;
    const unsigned* mine = p.signals[p.rank] + slot;
    for (int q = 0; q < p.ranks && wait; ++q) {
      if (q == p.rank || symm_wait_flag(mine + q, value, deadline)) continue;
      symm_record_fault(p, q, phase);
      failed = 1;
      break;
    }
  }
  __syncthreads();
  return failed == 0;
}

}  // namespace parbench::PB_KERNEL_NS
