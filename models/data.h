// Synthetic, seeded training data: sample i of step s is the same whichever rank asks for it, so every scheme
// trains on the same global batch. GPT: token sequences from a fixed noisy successor rule (learnable); MLP:
// vectors and the outputs of a fixed random teacher network.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "core/memory.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "models/config.h"

namespace parbench {

struct Batch {
  Tensor inputs;   // gpt: (B,T) i32 tokens; mlp: (B,C) in the model dtype
  Tensor targets;  // gpt: (B,T) i32 next tokens; mlp: (B,C)
  std::int64_t samples = 0;
};

class SyntheticData {
 public:
  SyntheticData(const ModelConfig& config, std::uint64_t seed);
  // Samples [first, first + count) of global step `step`, allocated on `alloc`'s device as activations. With
  // `upload_on`, copied from pinned host memory on that stream, so the host does not wait; else synchronously.
  Batch batch(std::int64_t step, std::int64_t first, std::int64_t count, TrackedAllocator& alloc,
              const Stream* upload_on = nullptr) const;
  // Microbatch k of data-parallel rank r: global samples [(k dp + r) micro, +micro). The union over ranks and k is
  // the global batch whatever dp is, so every scheme (and the single-rank check) sees the same samples.
  Batch microbatch(std::int64_t step, int k, int dp, int rank, std::int64_t micro, TrackedAllocator& alloc,
                   const Stream* upload_on = nullptr) const {
    return batch(step, (std::int64_t(k) * dp + rank) * micro, micro, alloc, upload_on);
  }

 private:
  // Pinned buffers a batch's inputs travel through; one is reused once its last copy is done, and a new one is
  // made while all are in flight, so a steady state neither waits nor allocates.
  struct Upload {
    explicit Upload(Device d) : staging(d), copied(d) {}
    HostStaging staging;
    Event copied;
  };
  void upload(const Tensor& dst, const void* host, const Stream* s) const;
  mutable std::vector<std::unique_ptr<Upload>> uploads_;

  ModelConfig config_;
  std::uint64_t seed_;
  std::vector<std::int32_t> successor_;  // gpt: the rule's next token
  std::vector<double> teacher_;          // mlp: (C, C) weights of the teacher
};

// A 64-bit mixing hash (splitmix64 finaliser): the one source of seeded randomness in models.
std::uint64_t mix64(std::uint64_t x);
// Uniform in [-1, 1) from a hash of the arguments.
double hash_uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0);

}  // namespace parbench
