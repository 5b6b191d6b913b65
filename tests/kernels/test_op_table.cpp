// Every entry of the op table (kernels/op_table.h) on every device this build runs, three ways: the cpu reference at
// the storage dtype against itself in float64, and the simt kernels (under forward, reverse and random thread
// schedules) and, where a GPU is usable, the cuda kernels against the cpu reference. Fresh random inputs,
// NaN-poisoned outputs, sizes that are not multiples of any tile. A new op is tested here through its table line.
// Measured errors are printed as "[table-err] entry dtype algo schedule device error".
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "kernels/op_table.h"
#include "kernels/ops.h"
#include "tests/kernels/kernel_test_util.h"
#include "device/simt/simt_runtime.h"

namespace parbench {
namespace {

using optable::OpKind;

// Odd sizes on purpose: T and C are not multiples of any tile, V is prime; heads of 8 channels. The second has an
// odd row count B*T = 65 over three row blocks of the two-pass column sums (kernels/column_sums.h), the last one
// ragged (22, 22, 21 rows), and C = 36, a multiple of neither 32 nor 128, with heads of 12 channels.
constexpr optable::OpShape kShape{2, 7, 24, 3, 37};
constexpr optable::OpShape kOddShape{5, 13, 36, 3, 41};

struct Param {
  const optable::OpEntry* entry;
  DType dtype;
  ops::MatmulAlgo algo;
  std::string schedule;  // of the simt device
  bool odd = false;      // kOddShape instead of kShape
};

// Failures name the entry, not its bytes.
void PrintTo(const Param& p, std::ostream* os) {
  *os << p.entry->name << " " << dtype_name(p.dtype) << " " << ops::matmul_algo_name(p.algo) << " " << p.schedule
      << (p.odd ? " odd" : "");
}

// Every entry at each of its dtypes (f32 and bf16, or its fixed ones) and matmul versions, under each schedule at
// kShape, and under a random one at kOddShape.
std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const auto& e : optable::op_table())
    for (DType d : {DType::f32, DType::bf16}) {
      if (e.kind == OpKind::fixed_dtype && d != DType::f32) continue;
      std::vector<ops::MatmulAlgo> algos{ops::MatmulAlgo::automatic};
      if (e.kind == OpKind::matmul_versions)
        algos = {ops::MatmulAlgo::naive, ops::MatmulAlgo::tiled, ops::MatmulAlgo::regtile, ops::MatmulAlgo::wmma,
                 ops::MatmulAlgo::mma};
      for (auto algo : algos) {
        for (const char* sched : {"forward", "reverse", "random"}) out.push_back({&e, d, algo, sched});
        out.push_back({&e, d, algo, "random", true});
      }
    }
  return out;
}

class OpTable : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string& s = GetParam().schedule;
    simt::set_schedule(simt::parse_schedule(s == "random" ? "random:" + std::to_string(test::test_seed() % 100000) : s));
  }
  void TearDown() override {
    simt::set_schedule(simt::parse_schedule("forward"));
  }
  // The sides: the reference in float64 (0), the reference (1), then each kernel device this build runs.
  std::vector<optable::Side> sides() {
    std::vector<optable::Side> s{{Device{DeviceKind::cpu}, &f64_alloc_, true}, {Device{DeviceKind::cpu}, &cpu_alloc_}};
    if (ops::kernels_available(DeviceKind::simt)) s.push_back({Device{DeviceKind::simt}, &simt_alloc_});
    if (ops::kernels_available(DeviceKind::cuda) && probe_cuda().usable) {
      cuda_alloc_ = std::make_unique<TrackedAllocator>(Device{DeviceKind::cuda});
      s.push_back({Device{DeviceKind::cuda}, cuda_alloc_.get()});
    }
    return s;
  }

  TrackedAllocator f64_alloc_{Device{DeviceKind::cpu}}, cpu_alloc_{Device{DeviceKind::cpu}};
  TrackedAllocator simt_alloc_{Device{DeviceKind::simt}};
  std::unique_ptr<TrackedAllocator> cuda_alloc_;
  std::mt19937_64 rng_{test::test_seed() ^ std::hash<std::string>{}(
                           ::testing::UnitTest::GetInstance()->current_test_info()->name())};
};

TEST_P(OpTable, MatchesTheReferenceOnEveryDevice) {
  const Param& p = GetParam();
  std::vector<optable::Side> s = sides();
  optable::OpCase c(s, p.dtype, rng_, p.algo);
  optable::Work w = p.entry->make(c, p.odd ? kOddShape : kShape);
  ASSERT_FALSE(w.checked.empty()) << p.entry->name << " checks no output";
  for (int i = 0; i < c.sides(); ++i) {
    Stream st(s[std::size_t(i)].device);
    w.call(i, st);
    st.synchronize();
  }
  const double tol = w.tol > 0 ? w.tol : optable::default_tolerance(p.dtype);
  for (std::size_t k = 0; k < w.checked.size(); ++k)
    for (int i = 1; i < c.sides(); ++i) {
      const int against = i == 1 ? 0 : 1;  // the reference against float64, the kernels against the reference
      const std::string where = i == 1 ? "cpu" : device_name(s[std::size_t(i)].device);
      double e = optable::rel_l2(w.checked[k][i], w.checked[k][against]);
      std::printf("[table-err] %-30s %-4s %-16s %-7s %-4s %-4s output %zu: %.2e (bound %.0e)\n",
                  p.entry->name.c_str(), std::string(dtype_name(p.dtype)).c_str(),
                  std::string(ops::matmul_algo_name(p.algo)).c_str(), p.schedule.c_str(), p.odd ? "odd" : "",
                  where.c_str(), k, e, tol);
      EXPECT_LE(e, tol) << p.entry->name << " output " << k << " on " << where;
    }
}

INSTANTIATE_TEST_SUITE_P(Entries, OpTable, ::testing::ValuesIn(all_params()), [](const auto& info) {
  const Param& p = info.param;
  std::string algo = p.entry->kind == OpKind::matmul_versions ? std::string(ops::matmul_algo_name(p.algo)) + "_" : "";
  return p.entry->name + "_" + std::string(dtype_name(p.dtype)) + "_" + algo + p.schedule + (p.odd ? "_odd" : "");
});

// The table's names are what bench_kernels registers and its CSV rows are named by: unique, and each entry makes
// a workload with counted work.
TEST(OpTableEntries, HaveUniqueNamesAndCountedWork) {
  std::set<std::string> names;
  TrackedAllocator alloc{Device{DeviceKind::cpu}};
  std::mt19937_64 rng{test::test_seed()};
  for (const auto& e : optable::op_table()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name << " is in the table twice";
    optable::OpCase c({{Device{DeviceKind::cpu}, &alloc}}, DType::f32, rng);
    optable::Work w = e.make(c, kShape);
    EXPECT_GT(w.bytes, 0) << e.name;
    EXPECT_TRUE(bool(w.call)) << e.name;
  }
  EXPECT_GE(names.size(), 26u);
}

// Inputs of kParallelFillElements elements or more are filled on every core from a hash of each index: every value
// in [lo, hi) and spread over it (mean and quartiles near the uniform's), the same for the same generator state
// and different for the next draw, in bf16 as in f32; one element fewer takes the one-thread path, still in range.
TEST(OpTableInputs, LargeTensorsFillUniformlyAndRepeatWithTheGenerator) {
  TrackedAllocator alloc{Device{DeviceKind::cpu}};
  for (DType t : {DType::f32, DType::bf16}) {
    const std::int64_t n = optable::kParallelFillElements;
    Tensor a(alloc, t, {n}, MemCategory::workspace), b(alloc, t, {n}, MemCategory::workspace);
    Tensor c(alloc, t, {n - 1}, MemCategory::workspace);
    std::mt19937_64 rng_a{7}, rng_b{7};
    optable::fill_uniform(a, rng_a, -0.5, 1.5);
    optable::fill_uniform(b, rng_b, -0.5, 1.5);
    double sum = 0;
    std::int64_t below_half = 0, same = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = load_as_double(a.data(), t, std::size_t(i));
      ASSERT_TRUE(x >= -0.5 && x < 1.5 + (t == DType::bf16 ? 1e-2 : 0)) << x << " at " << i;
      sum += x, below_half += x < 0.5;
      same += x == load_as_double(b.data(), t, std::size_t(i));
    }
    EXPECT_NEAR(sum / double(n), 0.5, 2e-3) << dtype_name(t);
    EXPECT_NEAR(double(below_half) / double(n), 0.5, 2e-3) << dtype_name(t);
    EXPECT_EQ(same, n) << dtype_name(t);
    optable::fill_uniform(b, rng_b, -0.5, 1.5);  // the next draw
    std::int64_t equal = 0;
    for (std::int64_t i = 0; i < 1000; ++i)
      equal += load_as_double(a.data(), t, std::size_t(i)) == load_as_double(b.data(), t, std::size_t(i));
    EXPECT_LT(equal, 100) << dtype_name(t);
    optable::fill_uniform(c, rng_a, 2, 3);
    for (std::int64_t i = 0; i < n - 1; i += 997) {
      const double x = load_as_double(c.data(), t, std::size_t(i));
      ASSERT_TRUE(x >= 2 && x <= 3) << x;
    }
  }
}

}  // namespace
}  // namespace parbench
