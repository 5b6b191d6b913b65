// Helpers for the kernel tests: random tensors, NaN poisoning, relative L2 error, host copies.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace parbench::test {

// Fresh inputs every run; the seed is printed so a failure can be replayed with PARBENCH_TEST_SEED.
inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("PARBENCH_TEST_SEED");
    std::uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::printf("[kernels] PARBENCH_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

inline void fill_uniform(Tensor& t, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  for (std::int64_t i = 0; i < t.numel(); ++i) store_from_double(t.data(), t.dtype(), std::size_t(i), u(rng));
}
inline void fill_tokens(Tensor& t, std::mt19937_64& rng, int V) {
  std::uniform_int_distribution<int> u(0, V - 1);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.ptr<std::int32_t>()[i] = u(rng);
}
inline void fill_nan(Tensor& t) {
  for (std::int64_t i = 0; i < t.numel(); ++i)
    store_from_double(t.data(), t.dtype(), std::size_t(i), std::numeric_limits<double>::quiet_NaN());
}
// Same bytes into a tensor of the same size (cpu and simt memory are both host memory).
inline void copy_into(Tensor& dst, const Tensor& src) {
  ASSERT_EQ(dst.bytes(), src.bytes());
  std::memcpy(dst.data(), src.data(), src.bytes());
}
inline double at(const Tensor& t, std::int64_t i) { return load_as_double(t.data(), t.dtype(), std::size_t(i)); }

// ||out - ref|| / ||ref||; infinity when out has any NaN or infinity (a poisoned element left unwritten).
inline double rel_l2(const Tensor& out, const Tensor& ref) {
  EXPECT_EQ(out.numel(), ref.numel());
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < ref.numel(); ++i) {
    double o = at(out, i), r = at(ref, i);
    if (!std::isfinite(o)) return std::numeric_limits<double>::infinity();
    num += (o - r) * (o - r);
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
inline double rel_l2(const std::vector<double>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) return std::numeric_limits<double>::infinity();
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}
inline std::vector<double> to_vector(const Tensor& t) {
  std::vector<double> v(std::size_t(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = at(t, std::int64_t(i));
  return v;
}

}  // namespace parbench::test
