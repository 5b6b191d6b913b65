// Synthetic data generation.
#include "models/data.h"

#include <cmath>
#include <cstring>

#include "core/memory.h"

namespace parbench {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double hash_uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  std::uint64_t h = mix64(seed ^ mix64(a ^ mix64(b)));
  return double(h >> 11) * 0x1.0p-52 - 1.0;
}

SyntheticData::SyntheticData(const ModelConfig& config, std::uint64_t seed) : config_(config), seed_(seed) {
  if (config.is_transformer()) {
    successor_.resize(config.vocab);
    for (int v = 0; v < config.vocab; ++v)
      successor_[v] = std::int32_t(mix64(seed ^ 0x5ccull ^ std::uint64_t(v)) % std::uint64_t(config.vocab));
  } else {
    const int C = config.hidden;
    teacher_.resize(std::size_t(C) * C);
    for (int i = 0; i < C * C; ++i) teacher_[i] = hash_uniform(seed, 0x7eac4e5ull, i) * 2.0 / std::sqrt(double(C));
  }
}

void SyntheticData::upload(const Tensor& dst, const void* host, const Stream* s) const {
  if (!s || dst.device().on_host()) {
    device_memcpy(dst.device(), dst.data(), Device{}, host, dst.bytes());
    return;
  }
  Upload* free = nullptr;
  for (auto& u : uploads_)
    if (u->copied.done()) {
      free = u.get();
      break;
    }
  if (!free) free = uploads_.emplace_back(std::make_unique<Upload>(dst.device())).get();
  char* pinned = free->staging.get(dst.bytes());
  std::memcpy(pinned, host, dst.bytes());
  device_memcpy_async(dst.device(), dst.data(), Device{}, pinned, dst.bytes(), *s);
  free->copied.record(*s);
}

Batch SyntheticData::batch(std::int64_t step, std::int64_t first, std::int64_t count, TrackedAllocator& alloc,
                           const Stream* upload_on) const {
  Batch b;
  b.samples = count;
  if (config_.is_transformer()) {
    const int T = config_.seq, V = config_.vocab;
    std::vector<std::int32_t> tokens(std::size_t(count) * (T + 1));
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint64_t sample = std::uint64_t(first + i), key = mix64(std::uint64_t(step) * 0x1000193ull) ^ sample;
      std::int32_t tok = std::int32_t(mix64(seed_ ^ key) % std::uint64_t(V));
      for (int t = 0; t <= T; ++t) {
        tokens[i * (T + 1) + t] = tok;
        // Mostly the rule's successor; one step in eight a random token, so the loss has a floor above zero.
        std::uint64_t r = mix64(seed_ ^ key ^ (std::uint64_t(t) << 40));
        tok = (r & 7) == 0 ? std::int32_t((r >> 8) % std::uint64_t(V)) : successor_[tok];
      }
    }
    std::vector<std::int32_t> in(std::size_t(count) * T), out(in.size());
    for (std::int64_t i = 0; i < count; ++i)
      for (int t = 0; t < T; ++t) {
        in[i * T + t] = tokens[i * (T + 1) + t];
        out[i * T + t] = tokens[i * (T + 1) + t + 1];
      }
    b.inputs = Tensor(alloc, DType::i32, {count, T}, MemCategory::activations);
    b.targets = Tensor(alloc, DType::i32, {count, T}, MemCategory::activations);
    upload(b.inputs, in.data(), upload_on);
    upload(b.targets, out.data(), upload_on);
    return b;
  }
  const int C = config_.hidden;
  const DType t = config_.dtype;
  std::vector<char> x(std::size_t(count) * C * dtype_size(t)), y(x.size());
  std::vector<double> xv(C);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint64_t key = mix64(std::uint64_t(step) * 0x1000193ull) ^ std::uint64_t(first + i);
    for (int k = 0; k < C; ++k) {
      xv[k] = hash_uniform(seed_, key, k);
      store_from_double(x.data(), t, std::size_t(i) * C + k, xv[k]);
    }
    for (int j = 0; j < C; ++j) {
      double acc = 0;
      for (int k = 0; k < C; ++k) acc += teacher_[std::size_t(j) * C + k] * xv[k];
      store_from_double(y.data(), t, std::size_t(i) * C + j, std::tanh(acc));
    }
  }
  b.inputs = Tensor(alloc, t, {count, C}, MemCategory::activations);
  b.targets = Tensor(alloc, t, {count, C}, MemCategory::activations);
  upload(b.inputs, x.data(), upload_on);
  upload(b.targets, y.data(), upload_on);
  return b;
}

}  // namespace parbench
