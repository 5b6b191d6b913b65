// A test parameterised by a simt thread schedule ("forward", "reverse", "random") that runs kernels on simt beside
// the cpu reference: one allocator and stream per device, a per-test random stream, NaN-poisoned output pairs.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <utility>

#include "device/simt/simt_runtime.h"
#include "tests/kernels/kernel_test_util.h"

namespace parbench::test {

class SimtPairTest : public ::testing::TestWithParam<std::string> {
 protected:
  TrackedAllocator cpu_alloc{Device{DeviceKind::cpu}}, simt_alloc{Device{DeviceKind::simt}};
  Stream cs{Device{DeviceKind::cpu}}, ss{Device{DeviceKind::simt}};
  std::mt19937_64 rng{test_seed() ^ std::hash<std::string>{}(
                          ::testing::UnitTest::GetInstance()->current_test_info()->name())};

  void SetUp() override {
    const std::string& s = GetParam();
    simt::set_schedule(simt::parse_schedule(s == "random" ? "random:" + std::to_string(test_seed() % 100000) : s));
  }
  void TearDown() override { simt::set_schedule(simt::parse_schedule("forward")); }

  Tensor make(TrackedAllocator& a, DType d, Shape s) { return Tensor(a, d, std::move(s), MemCategory::activations); }
  // Outputs on both devices, every element NaN until written.
  std::pair<Tensor, Tensor> out(DType d, Shape s) {
    Tensor c = make(cpu_alloc, d, s), g = make(simt_alloc, d, s);
    fill_nan(c);
    fill_nan(g);
    return {std::move(c), std::move(g)};
  }
};

}  // namespace parbench::test
