// simt internals: the arithmetic of warp collectives (which lane a shuffle reads, one step of a reduction), apart
// from the scheduling that gathers the lanes (block.cpp).
#pragma once
#include <cstdint>

#include "device/simt/simt_device.h"

namespace parbench::simt::detail {

// The lane a shuffle's lane i reads from with CUDA's rules for width and argument, or -1 where the source lies
// outside lane i's segment (lane i then keeps its own value).
inline long shuffle_source(WarpOp op, unsigned i, unsigned width, unsigned arg) {
  const unsigned pos = i & (width - 1), seg = i - pos;
  switch (op) {
    case WarpOp::shfl_idx: return long(seg + (arg & (width - 1)));
    case WarpOp::shfl_up: return pos >= arg ? long(i) - long(arg) : -1;
    case WarpOp::shfl_down: return std::uint64_t(pos) + arg < width ? long(i) + long(arg) : -1;
    case WarpOp::shfl_xor: return (i ^ (arg & 31u)) < seg + width ? long(i ^ (arg & 31u)) : -1;
    default: return -1;
  }
}

// One step of a __reduce_*_sync: the running result r combined with the next lane's value v.
inline std::uint32_t reduce_step(WarpOp op, std::uint32_t r, std::uint32_t v) {
  switch (op) {
    case WarpOp::reduce_add: return r + v;
    case WarpOp::reduce_min_s: return std::int32_t(v) < std::int32_t(r) ? v : r;
    case WarpOp::reduce_max_s: return std::int32_t(v) > std::int32_t(r) ? v : r;
    case WarpOp::reduce_min_u: return v < r ? v : r;
    case WarpOp::reduce_max_u: return v > r ? v : r;
    case WarpOp::reduce_and: return r & v;
    case WarpOp::reduce_or: return r | v;
    case WarpOp::reduce_xor: return r ^ v;
    default: return r;
  }
}

}  // namespace parbench::simt::detail
