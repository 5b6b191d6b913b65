// simt emulator, part 2: what a kernel body sees -- thread/block indices, barriers, warp collectives,
// atomics, memory hints. Barriers and warp collectives suspend the calling fiber (see block.cpp).
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "device/simt/simt_types.h"

namespace parbench::simt {

constexpr int warpSize = 32;

// Set by the block scheduler before it resumes a fiber. A block never leaves its OS thread, so
// thread_local storage is per block, and the fiber switch (an opaque call) makes the compiler reload.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace detail {

inline thread_local void* dynamic_shared_memory = nullptr;  // this block's PB_DYNAMIC_SHARED buffer

enum class BarrierKind : int { sync, count, all, any };
// Waits until every live thread of the block arrives at the same barrier site; returns the
// reduction of `pred` the kind asks for.
int block_barrier(BarrierKind kind, int pred, const char* file, int line);

enum class WarpOp : int {
  shfl_idx, shfl_up, shfl_down, shfl_xor, ballot, sync,
  reduce_add, reduce_min_s, reduce_max_s, reduce_min_u, reduce_max_u, reduce_and, reduce_or, reduce_xor,
  match_any, mma
};
struct WarpArgs {
  WarpOp op;
  unsigned mask;
  std::uint64_t value = 0;  // the lane's operand, raw bits
  unsigned arg = 0;         // source lane, delta or lane mask
  int width = 32;
  void* data = nullptr;     // mma: this lane's MmaLane
};
// Completes when every live lane named in `mask` has arrived with the same op and mask; returns
// this lane's result bits.
std::uint64_t warp_collective(const WarpArgs& args, const char* file, int line);
unsigned live_lanes_of_warp();  // __activemask: the lanes of this warp that have not exited

template <class T>
inline std::uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp collectives move values of at most 8 bytes");
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
inline T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
template <class T>
inline T shuffle(WarpOp op, unsigned mask, T var, unsigned arg, int width, const char* file, int line) {
  WarpArgs a{op, mask, to_bits(var), arg, width, nullptr};
  return from_bits<T>(warp_collective(a, file, line));
}

}  // namespace detail

// ---- barriers (the call site's file:line identifies the barrier)
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  detail::block_barrier(detail::BarrierKind::sync, 0, file, line);
}
inline int __syncthreads_count(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return detail::block_barrier(detail::BarrierKind::count, pred, file, line);
}
inline int __syncthreads_and(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return detail::block_barrier(detail::BarrierKind::all, pred, file, line);
}
inline int __syncthreads_or(int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return detail::block_barrier(detail::BarrierKind::any, pred, file, line);
}

// ---- warp collectives, for any trivially copyable type of at most 8 bytes (float, int, unsigned,
// long long, double, __half, __nv_bfloat16, __half2, __nv_bfloat162, ...)
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE()) {
  return detail::shuffle(detail::WarpOp::shfl_idx, mask, var, unsigned(src_lane), width, file, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                        const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return detail::shuffle(detail::WarpOp::shfl_up, mask, var, delta, width, file, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return detail::shuffle(detail::WarpOp::shfl_down, mask, var, delta, width, file, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                         const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return detail::shuffle(detail::WarpOp::shfl_xor, mask, var, unsigned(lane_mask), width, file, line);
}
// The ballot's result carries the participants (the mask's live lanes at completion) in its high
// half, so __all_sync does not depend on lanes that exit afterwards.
inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return unsigned(detail::warp_collective({detail::WarpOp::ballot, mask, pred != 0, 0, 32, nullptr}, file, line));
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return __ballot_sync(mask, pred, file, line) != 0;
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  const std::uint64_t r = detail::warp_collective({detail::WarpOp::ballot, mask, pred != 0, 0, 32, nullptr}, file, line);
  return std::uint32_t(r) == std::uint32_t(r >> 32);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  detail::warp_collective({detail::WarpOp::sync, mask, 0, 0, 32, nullptr}, file, line);
}
inline unsigned __activemask() { return detail::live_lanes_of_warp(); }
#define PB_SIMT_REDUCE(name, op, T)                                                                   \
  inline T name(unsigned mask, T v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) { \
    return detail::shuffle(detail::WarpOp::op, mask, v, 0, 32, file, line);                           \
  }
PB_SIMT_REDUCE(__reduce_add_sync, reduce_add, unsigned)
PB_SIMT_REDUCE(__reduce_add_sync, reduce_add, int)
PB_SIMT_REDUCE(__reduce_min_sync, reduce_min_u, unsigned)
PB_SIMT_REDUCE(__reduce_min_sync, reduce_min_s, int)
PB_SIMT_REDUCE(__reduce_max_sync, reduce_max_u, unsigned)
PB_SIMT_REDUCE(__reduce_max_sync, reduce_max_s, int)
PB_SIMT_REDUCE(__reduce_and_sync, reduce_and, unsigned)
PB_SIMT_REDUCE(__reduce_or_sync, reduce_or, unsigned)
PB_SIMT_REDUCE(__reduce_xor_sync, reduce_xor, unsigned)
#undef PB_SIMT_REDUCE
template <class T>
inline unsigned __match_any_sync(unsigned mask, T v, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return unsigned(detail::warp_collective({detail::WarpOp::match_any, mask, detail::to_bits(v), 0, 32, nullptr}, file, line));
}

// ---- atomics: blocks run in parallel on several OS threads, so these are real atomics.
#define PB_SIMT_ATOMIC_INT(T)                                                                          \
  inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }                  \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }                \
  inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }              \
  inline T atomicCAS(T* p, T expected, T desired) {                                                   \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
    return expected;                                                                                   \
  }                                                                                                    \
  inline T atomicMax(T* p, T v) {                                                                      \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                      \
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) \
      ;                                                                                                \
    return old;                                                                                        \
  }                                                                                                    \
  inline T atomicMin(T* p, T v) {                                                                      \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                      \
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) \
      ;                                                                                                \
    return old;                                                                                        \
  }
PB_SIMT_ATOMIC_INT(int)
PB_SIMT_ATOMIC_INT(unsigned)
PB_SIMT_ATOMIC_INT(long long)
PB_SIMT_ATOMIC_INT(unsigned long long)
#undef PB_SIMT_ATOMIC_INT
inline unsigned short atomicCAS(unsigned short* p, unsigned short expected, unsigned short desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
// atomicInc/atomicDec wrap as CUDA's do: inc gives ((old >= limit) ? 0 : old + 1).
inline unsigned atomicInc(unsigned* p, unsigned limit) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
    ;
  return old;
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, (old == 0 || old > limit) ? limit : old - 1, true, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED))
    ;
  return old;
}
inline float atomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }
inline double atomicAdd(double* p, double v) { return std::atomic_ref<double>(*p).fetch_add(v); }
inline float atomicExch(float* p, float v) { return std::atomic_ref<float>(*p).exchange(v); }
// 16-bit float adds through a compare-and-swap on the 16-bit word, as CUDA does on older GPUs.
template <class H>
inline H atomic_add_16(H* p, H v) {
  static_assert(sizeof(H) == 2);
  auto* w = reinterpret_cast<unsigned short*>(p);
  unsigned short old = __atomic_load_n(w, __ATOMIC_RELAXED);
  for (;;) {
    H cur = simt_bit_cast<H>(old);
    unsigned short next = simt_bit_cast<unsigned short>(H(float(cur) + float(v)));
    if (__atomic_compare_exchange_n(w, &old, next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return cur;
  }
}
inline __half atomicAdd(__half* p, __half v) { return atomic_add_16(p, v); }
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* p, __nv_bfloat16 v) { return atomic_add_16(p, v); }
// Block- and system-scope forms: every simt atomic is a sequentially consistent host atomic, so they are the same
// operation; system scope reaches a peer GPU's memory mapped into this process (peer access, CUDA IPC) and a
// peer process's view of memory shared through CUDA IPC.
#define PB_SIMT_SCOPED(name)                                                             \
  template <class T, class V>                                                            \
  inline T name##_block(T* p, V v) { return name(p, T(v)); }                              \
  template <class T, class V>                                                            \
  inline T name##_system(T* p, V v) { return name(p, T(v)); }
PB_SIMT_SCOPED(atomicAdd)
PB_SIMT_SCOPED(atomicSub)
PB_SIMT_SCOPED(atomicAnd)
PB_SIMT_SCOPED(atomicOr)
PB_SIMT_SCOPED(atomicXor)
PB_SIMT_SCOPED(atomicExch)
PB_SIMT_SCOPED(atomicMax)
PB_SIMT_SCOPED(atomicMin)
#undef PB_SIMT_SCOPED
template <class T, class V, class W>
inline T atomicCAS_block(T* p, V expected, W desired) { return atomicCAS(p, T(expected), T(desired)); }
template <class T, class V, class W>
inline T atomicCAS_system(T* p, V expected, W desired) { return atomicCAS(p, T(expected), T(desired)); }
inline unsigned atomicInc_system(unsigned* p, unsigned limit) { return atomicInc(p, limit); }
inline unsigned atomicDec_system(unsigned* p, unsigned limit) { return atomicDec(p, limit); }
inline unsigned atomicInc_block(unsigned* p, unsigned limit) { return atomicInc(p, limit); }
inline unsigned atomicDec_block(unsigned* p, unsigned limit) { return atomicDec(p, limit); }

// ---- memory-system hints: plain loads and stores on the host
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
namespace detail {
// What a spin loop calls while it waits for another thread to set a flag (block.cpp). In a kernel the calling
// thread's fiber yields, so the block's other threads run (one of them may be the one it waits for); when a whole
// round of the block's threads only yielded, the OS thread pauses too, so a peer GPU's kernel or another block on
// the same core runs. Under the interleaving fuzz (set_interleave_fuzz) it sometimes sleeps a random while.
void spin_pause();
}  // namespace detail
// Nanoseconds of real (steady) time, so a deadline a kernel computes from it expires; it also lets the block's
// other threads run (a spin loop that checks a deadline makes progress without __nanosleep).
long long clock64();
inline long long clock() { return clock64(); }
// A spin loop's pause: yields to the block's other threads, then to other work on the core. The argument is not
// honoured as a duration (a pause is short on the emulator too).
inline void __nanosleep(unsigned) { detail::spin_pause(); }

}  // namespace parbench::simt
