// Random fills, NaN poison and the relative L2 error of tensors of any dtype (kernels/tensor_values.h).
#include "kernels/tensor_values.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "core/memory.h"

namespace parbench::optable {

namespace {

// fn(begin, end) over [0, n): in one contiguous range per core from kParallelFillElements on, else at once.
void for_ranges_on_all_cores(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n < kParallelFillElements) return fn(0, n);
  const std::int64_t threads = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t per = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (std::int64_t begin = 0; begin < n; begin += per)
    pool.emplace_back(fn, begin, std::min(n, begin + per));
  for (std::thread& th : pool) th.join();
}

// splitmix64: a well-mixed 64-bit value from a counter.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void fill_uniform(Tensor& t, std::mt19937_64& rng, double lo, double hi) {
  const std::int64_t n = t.numel();
  if (n < kParallelFillElements) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (std::int64_t i = 0; i < n; ++i) store_from_double(t.data(), t.dtype(), std::size_t(i), u(rng));
    return;
  }
  const std::uint64_t seed = rng();
  for_ranges_on_all_cores(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const double unit = double(mix(seed + std::uint64_t(i)) >> 11) * 0x1p-53;  // [0, 1)
      store_from_double(t.data(), t.dtype(), std::size_t(i), lo + (hi - lo) * unit);
    }
  });
}

void fill_nan(Tensor& t) {
  for_ranges_on_all_cores(t.numel(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      store_from_double(t.data(), t.dtype(), std::size_t(i), std::numeric_limits<double>::quiet_NaN());
  });
}

namespace {
// The elements of a tensor on any device, as doubles.
std::vector<double> host_values(const Tensor& t) {
  std::vector<unsigned char> bytes(t.bytes());
  device_memcpy(Device{}, bytes.data(), t.device(), t.data(), t.bytes());
  std::vector<double> v(std::size_t(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = load_as_double(bytes.data(), t.dtype(), i);
  return v;
}
}  // namespace

double rel_l2(const Tensor& out, const Tensor& ref) { return rel_l2(host_values(out), host_values(ref)); }

double rel_l2(const std::vector<double>& o, const std::vector<double>& r) {
  if (o.size() != r.size())
    throw Error("rel_l2: " + std::to_string(o.size()) + " elements against " + std::to_string(r.size()));
  double num = 0, den = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (!std::isfinite(o[i])) return std::numeric_limits<double>::infinity();
    num += (o[i] - r[i]) * (o[i] - r[i]);
    den += r[i] * r[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace parbench::optable
