// The op table: each row of kernels/op_list.h with its workload (defined in its op's host file, kernels/<op>.cpp, as
// <name>_workload), and the making and comparing of a workload's tensors on every side.
#include "kernels/op_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "base/error.h"
#include "core/memory.h"

namespace parbench::optable {

#define PB_DECLARE_WORKLOAD(name, kind, pair, cost) Work name##_workload(OpCase& c, const OpShape& s);
PB_OP_TABLE(PB_DECLARE_WORKLOAD)
#undef PB_DECLARE_WORKLOAD

const std::vector<OpEntry>& op_table() {
#define PB_ENTRY(name, kind, pair, cost) OpEntry{#name, name##_workload, kind, pair, cost},
  static const std::vector<OpEntry> table{PB_OP_TABLE(PB_ENTRY)};
#undef PB_ENTRY
  return table;
}

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

Arg OpCase::alloc(DType t, const Shape& shape) {
  Arg x;
  for (const Side& s : sides_) {
    DType st = s.f64 && dtype_is_float(t) ? DType::f64 : t;
    x.at.emplace_back(*s.alloc, st, shape, MemCategory::activations);
  }
  return x;
}

// The host tensor's values onto every side: copied where the dtype is the same, converted (on the host) where a
// side holds f64.
void OpCase::upload(Arg& x, const Tensor& host) {
  for (std::size_t i = 0; i < sides_.size(); ++i) {
    Tensor& t = x.at[i];
    if (t.dtype() == host.dtype()) {
      device_memcpy(sides_[i].device, t.data(), Device{}, host.data(), host.bytes());
      continue;
    }
    if (!t.device().on_host()) throw Error("OpCase: a converted copy must be on the host, not on " + device_name(t.device()));
    for (std::int64_t e = 0; e < host.numel(); ++e)
      store_from_double(t.data(), t.dtype(), std::size_t(e), load_as_double(host.data(), host.dtype(), std::size_t(e)));
  }
}

Arg OpCase::in(DType t, const Shape& shape, double lo, double hi) {
  Arg x = alloc(t, shape);
  Tensor host(host_, t, shape, MemCategory::workspace);
  fill_uniform(host, rng_, lo, hi);
  upload(x, host);
  return x;
}

Arg OpCase::tokens(const Shape& shape, int V) {
  Arg x = alloc(DType::i32, shape);
  Tensor host(host_, DType::i32, shape, MemCategory::workspace);
  std::uniform_int_distribution<int> u(0, V - 1);
  for (std::int64_t i = 0; i < host.numel(); ++i) host.ptr<std::int32_t>()[i] = u(rng_);
  upload(x, host);
  return x;
}

Arg OpCase::out(DType t, const Shape& shape) {
  Arg x = alloc(t, shape);
  Tensor host(host_, t, shape, MemCategory::workspace);
  fill_nan(host);
  upload(x, host);
  return x;
}

}  // namespace parbench::optable
