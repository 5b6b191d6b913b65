// Element loops shared by the device-side collectives' kernels (included by their .cu files): block partitions,
// copies, the rank-order reduction over every peer's buffer, and the choice of a kernel instance per dtype and op.
#pragma once
#include <algorithm>
#include <cstring>

#include "base/float16.h"
#include "collectives/device_side/symm_sync.h"
#include "collectives/table/partition.h"
#include "collectives/table/types.h"
#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

#if defined(PB_SIMT)
#define PB_HD
constexpr unsigned kSymmThreads = 128;  // emulated threads are fibers: few blocks, short ones
constexpr unsigned kSymmBlocks = 4;
#else
#define PB_HD __host__ __device__
constexpr unsigned kSymmThreads = 512;
constexpr unsigned kSymmBlocks = 24;
#endif
#include "collectives/communicator/reduce_elem.inc"
#undef PB_HD
static_assert(kSymmBlocks <= unsigned(kSymmMaxBlocks), "the layer keeps flags for kSymmMaxBlocks blocks");

// [begin, end) of part i when n elements from `begin` are split as evenly as possible into `parts`.
struct SymmRange {
  unsigned long long begin, end;
};
__device__ inline SymmRange symm_part(unsigned long long begin, unsigned long long n, unsigned parts, unsigned i) {
  const EvenPart part = even_part(n, parts, i);
  return {begin + part.offset, begin + part.offset + part.length};
}

// Blocks for `n` elements per rank: every rank computes the same from the same count (their blocks pair up).
inline unsigned symm_blocks(unsigned long long n) {
  const unsigned long long per_block = 8ull * kSymmThreads;
  return unsigned(std::clamp<unsigned long long>((n + per_block - 1) / per_block, 1, kSymmBlocks));
}

// naive-dev's and tree-dev's kernels: their int argument packs the collective, the root times 16 and avg times
// 256 (symm_rooted_flags, on the host); their first step (symm_rooted_begin) begins the operation and takes the
// call apart, with the deadline of its waits and this block's part of the elements.
inline int symm_rooted_flags(int coll, int root, bool avg) { return coll | root << 4 | (avg ? 256 : 0); }
struct SymmRootedCall {
  Collective coll;
  int root, avg;
  unsigned long long deadline;
  SymmRange part;
};
__device__ inline SymmRootedCall symm_rooted_begin(SymmPeers& p, unsigned long long count, int flags) {
  symm_op_begin(p);
  const unsigned long long deadline = symm_now_ns() + p.timeout_ns;
  return {Collective(flags & 15), (flags >> 4) & 15, flags >> 8, deadline, symm_part(0, count, gridDim.x, blockIdx.x)};
}

template <class S>
__device__ void symm_copy(S* dst, const S* src, SymmRange r) {
  for (unsigned long long i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) dst[i] = src[i];
}

// One rank's bit in the flag masks of symm_exchange (none for -1).
__device__ inline unsigned symm_bit(int rank) { return rank < 0 ? 0u : 1u << rank; }

// a OP b stored in the dtype, as every step of the reductions.
template <class E, int OP>
__device__ typename E::S symm_combine(typename E::S a, typename E::S b) {
  return E::store(combine_values<OP>(E::load(a), E::load(b)));
}
template <class E>
__device__ typename E::S symm_average(typename E::S a, int ranks) {
  return E::store(E::load(a) / typename E::C(ranks));
}

// out[i - out_from] (and out2[i] when not null) = the reduction of every rank's buffer at i, combined in rank order
// with the rules of the other implementations (reduce_elem.inc: stored after each step, avg divided at the end), so
// every rank gets bit-identical results.
template <class E, int OP>
__device__ void symm_reduce(const SymmPeers& p, SymmRange r, typename E::S* out, typename E::S* out2, int avg,
                            unsigned long long out_from = 0) {
  using S = typename E::S;
  const S* in[kSymmMaxRanks];
  for (int q = 0; q < p.ranks; ++q) in[q] = static_cast<const S*>(p.buffers[q]);
  for (unsigned long long i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    S acc = in[0][i];
    for (int q = 1; q < p.ranks; ++q) acc = E::store(combine_values<OP>(E::load(acc), E::load(in[q][i])));
    if (avg) acc = E::store(E::load(acc) / typename E::C(p.ranks));
    out[i - out_from] = acc;
    if (out2) out2[i] = acc;
  }
}

using SymmKernel = void (*)(SymmPeers, const void*, void*, unsigned long long, int);

// combine_values (reduce_elem.inc) numbers the ops as ReduceOp does; avg combines as sum.
static_assert(int(ReduceOp::sum) == 0 && int(ReduceOp::prod) == 1 && int(ReduceOp::max) == 2 &&
              int(ReduceOp::min) == 3);
inline SymmKernel symm_by_op(int op, SymmKernel sum, SymmKernel prod, SymmKernel max, SymmKernel min) {
  switch (ReduceOp(op)) {
    case ReduceOp::prod: return prod;
    case ReduceOp::max: return max;
    case ReduceOp::min: return min;
    default: return sum;
  }
}

}  // namespace parbench::PB_KERNEL_NS

// The instance of kernel template K<E, OP> for an integer dtype and op (DType and ReduceOp by their names).
#define PB_SYMM_OPS(K, E, op) symm_by_op(op, &K<E, 0>, &K<E, 1>, &K<E, 2>, &K<E, 3>)
#define PB_SYMM_PICK(K, dtype, op)                                  \
  [&]() -> SymmKernel {                                             \
    switch (DType(dtype)) {                                         \
      case DType::f64: return PB_SYMM_OPS(K, ElemF64, op);          \
      case DType::f32: return PB_SYMM_OPS(K, ElemF32, op);          \
      case DType::f16: return PB_SYMM_OPS(K, ElemF16, op);          \
      case DType::bf16: return PB_SYMM_OPS(K, ElemBF16, op);        \
      case DType::i32: return PB_SYMM_OPS(K, ElemI32, op);          \
      case DType::i8: return PB_SYMM_OPS(K, ElemI8, op);            \
      case DType::u8: return PB_SYMM_OPS(K, ElemU8, op);            \
    }                                                               \
    return nullptr;                                                 \
  }()
