// Flag synchronisation between GPUs for the device-side collectives' kernels (included by their .cu files):
// store-release and load-acquire at system scope, a bounded spin, and the block-wide barrier and ring step built
// on them.
// Flags are only ever touched through these: never a plain or volatile read.
#pragma once
#include "collectives/device_side/symm_kernels.h"
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

// Every thread of the block, first in a device-side collective's kernel: the operation's flag base into p.base.
// It is the later of the host's count at issue and this rank's counter for the block slot (the counter runs ahead
// when a CUDA graph replays captured launches, whose arguments stay those of the capture; the host's count runs
// ahead of a kernel that does not call this). Thread 0 sets the counters to base + p.phases: its own slot, and for
// block 0 the slots this launch has no block for, so every slot stays equal whatever the next launch's block count.
// Only this rank's kernels touch the counters, one after the other in stream order, so plain accesses do.
__device__ inline void symm_op_begin(SymmPeers& p) {
  __shared__ unsigned block_base;
  if (threadIdx.x == 0) {
    const unsigned counted = p.epochs[blockIdx.x];
    block_base = int(counted - p.base) > 0 ? counted : p.base;  // serial-number order: the counts may wrap
    p.epochs[blockIdx.x] = block_base + p.phases;
    if (blockIdx.x == 0)
      for (unsigned b = gridDim.x; b < unsigned(kSymmMaxBlocks); ++b) p.epochs[b] = block_base + p.phases;
  }
  __syncthreads();
  p.base = block_base;
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

// Thread 0 only, after a __syncthreads: this block's flag on rank `to` becomes base + phase, after the block's
// writes so far.
__device__ inline void symm_signal(const SymmPeers& p, int to, unsigned phase) {
  __threadfence_system();
  store_release_sys(p.signals[to] + blockIdx.x * unsigned(kSymmMaxRanks) + unsigned(p.rank), p.base + phase);
}

// Thread 0 only: waits until rank `from`'s flag for this block here reaches base + phase; false (the fault
// recorded) when it did not before `deadline`.
__device__ inline bool symm_wait(const SymmPeers& p, int from, unsigned phase, unsigned long long deadline) {
  const unsigned* flag = p.signals[p.rank] + blockIdx.x * unsigned(kSymmMaxRanks) + unsigned(from);
  if (symm_wait_flag(flag, p.base + phase, deadline)) return true;
  symm_record_fault(p, from, phase);
  return false;
}

// Every thread of the block calls them. symm_barrier: this block's flag set to base + phase on every peer, then
// every peer's same block waited for; symm_step: the flag set on rank `to` only, then rank `from` waited for (a
// ring's neighbours). False when a peer did not arrive before `deadline` (the fault recorded): the block must then
// return. `wait` false skips the waiting (the planted race of the tests only).
__device__ inline bool symm_barrier(const SymmPeers& p, unsigned phase, unsigned long long deadline,
                                    bool wait = true) {
  __shared__ int failed;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int q = 0; q < p.ranks; ++q)
      if (q != p.rank) symm_signal(p, q, phase);
    failed = 0;
    for (int q = 0; q < p.ranks && wait && !failed; ++q)
      if (q != p.rank && !symm_wait(p, q, phase, deadline)) failed = 1;
  }
  __syncthreads();
  return failed == 0;
}

// The general form, for trees and butterflies: this block's flag set to base + phase on every rank in the bit mask
// `to`, then every rank in the mask `from` waited for (in rank order, so the first missing one is named).
__device__ inline bool symm_exchange(const SymmPeers& p, unsigned to, unsigned from, unsigned phase,
                                     unsigned long long deadline, bool wait = true) {
  __shared__ int failed;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int q = 0; q < p.ranks; ++q)
      if (to >> q & 1u) symm_signal(p, q, phase);
    failed = 0;
    for (int q = 0; q < p.ranks && wait && !failed; ++q)
      if ((from >> q & 1u) && !symm_wait(p, q, phase, deadline)) failed = 1;
  }
  __syncthreads();
  return failed == 0;
}

__device__ inline bool symm_step(const SymmPeers& p, int to, int from, unsigned phase, unsigned long long deadline,
                                 bool wait = true) {
  __shared__ int failed;
  __syncthreads();
  if (threadIdx.x == 0) {
    symm_signal(p, to, phase);
    failed = wait && !symm_wait(p, from, phase, deadline) ? 1 : 0;
  }
  __syncthreads();
  return failed == 0;
}

}  // namespace parbench::PB_KERNEL_NS
