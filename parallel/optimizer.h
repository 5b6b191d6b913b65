// The optimizer over a flat range of parameters (the whole model, or one rank's shard): AdamW or SGD, with fp32
// master weights when the model is bf16. Its state is tracked as `optimizer` memory on its own allocator, which is
// a host allocator when the state is offloaded.
#pragma once
#include <cstdint>

#include "core/allocator.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "parallel/train.h"

namespace parbench {

class FlatOptimizer {
 public:
  // `initial` holds the starting values of the range (model dtype, on `state_alloc`'s device), written on stream
  // `s`, where the fp32 master copy of a bf16 model is converted from it.
  FlatOptimizer(const TrainConfig& cfg, TrackedAllocator& state_alloc, const Tensor& initial, const Stream& s);
  // params = update(params, grads); both in the model dtype and on the state allocator's device.
  void step(Tensor& params, const Tensor& grads, int step_index, const Stream& s);
  // Bytes of state per parameter: AdamW 8 (m, v) or SGD 0, plus 4 for the fp32 master in bf16 mode.
  static std::int64_t state_bytes_per_param(const TrainConfig& cfg);

 private:
  const TrainConfig& cfg_;
  TrackedAllocator& alloc_;
  Tensor m_, v_, master_;
};

}  // namespace parbench
