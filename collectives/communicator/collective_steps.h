// What a host-driven algorithm may do with its group, and nothing more: the group's shape and device, the local
// steps (combine, divide and copy on the group's device, scratch buffers kept between calls) and point-to-point
// within the call's deadline. Communicator implements it; the algorithms of algorithms/ see only this, not the
// communicator's NCCL state, timeouts, batching or registry.
#pragma once
#include <cstddef>
#include <span>

#include "collectives/table/partition.h"
#include "collectives/table/types.h"
#include "collectives/transport/transport.h"
#include "core/device.h"

namespace parbench {

class CollectiveSteps {
 public:
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const Device& device() const = 0;
  // True when every rank is a thread of this process (their buffers are addressable from each other).
  virtual bool ranks_share_address_space() const = 0;
  // The node rank `r` of the group runs on, as the launch found it (numbered 0.. in the order of the world's
  // first rank on each; 0 for every rank when unknown): what topology-aware algorithms place their phases by.
  virtual int node_of(int r) const = 0;

  // out = x op y; `out` may be `x` (an out-of-place algorithm's first step reads its send buffer, not a copy).
  virtual void combine(void* out, const void* x, const void* y, std::size_t count, DType t, ReduceOp op) = 0;
  void combine(void* inout, const void* in, std::size_t count, DType t, ReduceOp op) {
    combine(inout, inout, in, count, t, op);
  }
  virtual void divide(void* buf, std::size_t count, DType t) = 0;  // buf /= size(): the end of avg
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // A device buffer of at least `bytes`, kept between calls (slots 0 and 1 are the algorithms').
  virtual void* scratch(int slot, std::size_t bytes) = 0;

  // Every op of the group posted, then all completed, within the call's deadline.
  virtual void group(std::span<const P2POp> ops) = 0;
  virtual void send(const void* buf, std::size_t bytes, int peer) = 0;
  virtual void recv(void* buf, std::size_t bytes, int peer) = 0;
  virtual void barrier() = 0;

 protected:
  ~CollectiveSteps() = default;
};

// Helpers shared by the algorithm files.
inline char* byte_ptr(void* p, std::size_t elems, DType t) { return static_cast<char*>(p) + elems * dtype_size(t); }
inline const char* byte_ptr(const void* p, std::size_t elems, DType t) {
  return static_cast<const char*>(p) + elems * dtype_size(t);
}
// Block b of `count` elements split as evenly as possible into n blocks (table/partition.h, as the device-side
// kernels split): [offset, offset + length).
struct Block {
  std::size_t offset, length;
};
inline Block even_block(std::size_t count, int n, int b) {
  const EvenPart part = even_part(count, std::size_t(n), std::size_t(b));
  return {std::size_t(part.offset), std::size_t(part.length)};
}

}  // namespace parbench
