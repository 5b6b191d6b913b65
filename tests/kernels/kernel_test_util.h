// Helpers for the kernel tests: random tensors, NaN poisoning, relative L2 error, host copies, the cpu fixture.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "base/dtype.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/op_table.h"

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

// Random and poisoned host tensors, and the relative L2 error: the op table's helpers, which bench_kernels uses too.
using optable::fill_nan;
using optable::fill_uniform;
using optable::rel_l2;
inline void fill_tokens(Tensor& t, std::mt19937_64& rng, int V) {
  std::uniform_int_distribution<int> u(0, V - 1);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.ptr<std::int32_t>()[i] = u(rng);
}
// Same bytes into a tensor of the same size (cpu and simt memory are both host memory).
inline void copy_into(Tensor& dst, const Tensor& src) {
  ASSERT_EQ(dst.bytes(), src.bytes());
  std::memcpy(dst.data(), src.data(), src.bytes());
}
inline double at(const Tensor& t, std::int64_t i) { return load_as_double(t.data(), t.dtype(), std::size_t(i)); }

// The cpu device's tensors for the reference tests: random, NaN-poisoned and token tensors from a per-test seed.
class CpuOps : public ::testing::Test {
 protected:
  TrackedAllocator alloc{Device{DeviceKind::cpu}};
  Stream s{Device{DeviceKind::cpu}};
  std::mt19937_64 rng{test::test_seed() ^ std::hash<std::string>{}(
                          ::testing::UnitTest::GetInstance()->current_test_info()->name())};

  Tensor make(DType d, Shape shape) { return Tensor(alloc, d, std::move(shape), MemCategory::activations); }
  Tensor rnd(DType d, Shape shape, double lo = -1, double hi = 1) {
    Tensor t = make(d, std::move(shape));
    fill_uniform(t, rng, lo, hi);
    return t;
  }
  Tensor poisoned(DType d, Shape shape) {
    Tensor t = make(d, std::move(shape));
    fill_nan(t);
    return t;
  }
  Tensor tokens(Shape shape, int vocab) {
    Tensor t = make(DType::i32, std::move(shape));
    fill_tokens(t, rng, vocab);
    return t;
  }
};

inline std::vector<double> to_vector(const Tensor& t) {
  std::vector<double> v(std::size_t(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = at(t, std::int64_t(i));
  return v;
}

// The message of the exception f throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace parbench::test
