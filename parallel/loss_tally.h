// A step's losses, read without stopping the device: each microbatch's loss tensor is copied to pinned host
// memory on the compute stream, and the mean is read once the step's work is done (by then the copies are too).
#pragma once
#include <memory>
#include <vector>

#include "core/memory.h"
#include "core/stream.h"
#include "core/tensor.h"

namespace parbench {

class LossTally {
 public:
  explicit LossTally(Device device) : device_(device) {}
  void clear() { used_ = 0; }  // a new step
  // Queues the copy of a microbatch's per-sample (or per-token) losses on `s`.
  void add(const Tensor& losses, const Stream& s);
  // The mean over the added microbatches of each one's mean loss; waits only for copies not yet done.
  double mean() const;

 private:
  struct Slot {
    explicit Slot(Device d) : staging(d), copied(d) {}
    HostStaging staging;
    Event copied;
    std::int64_t numel = 0;
    DType dtype = DType::f32;
  };
  Device device_;
  std::vector<std::unique_ptr<Slot>> slots_;  // reused from step to step
  std::size_t used_ = 0;
};

}  // namespace parbench
