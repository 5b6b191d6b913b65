// A collective implementation (library call or hand-written algorithm): what the registry (collectives/registry.h)
// holds by --impl name.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/table/types.h"

namespace parbench {

class Communicator;

// One collective call. Buffers follow NCCL's conventions (see buffer_counts and inplace_offset in types.h);
// `count` is the per-rank count.
struct CollArgs {
  Collective coll = Collective::allreduce;
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;  // rooted collectives only
  // The cudaStream_t the call is ordered on, as nccl-tests' runColl takes one (null: the legacy default stream).
  // A library collective is queued on it; a hand-written one waits for it, then runs on the default stream (its
  // copies and transports are ordered there).
  void* stream = nullptr;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string_view name() const = 0;
  // Empty when this implementation can run `c` on `comm`; otherwise why not, in words.
  virtual std::string unsupported(Collective c, const Communicator& comm) const = 0;
  virtual void run(Communicator& comm, const CollArgs& a) const = 0;
  // True for a library collective queued on CollArgs::stream (NCCL); the others wait for that stream first.
  virtual bool queues_on_callers_stream() const { return false; }
  // Empty when a CUDA graph can capture `c` (nccl-tests' -G): every step is queued on CollArgs::stream, with no
  // host wait, host step or allocation once a first call of the same size has run. Otherwise why not, in words.
  virtual std::string capture_refusal(Collective) const {
    return std::string(name()) + " is host-driven: the host orders its steps (it waits for its GPU copies and "
                                 "kernels, and exchanges messages or flags with the other ranks between them), and "
                                 "a CUDA graph holds only work queued on a stream; nccl and the device-side "
                                 "implementations (*-dev) can be captured";
  }
};

}  // namespace parbench
