// bench_kernels' memory estimate (benchmarks/kernels_bench/memory.h) against what the op table's workloads allocate:
// every entry at every bench shape a host can make quickly, in both storage dtypes, on the benchmarked side and
// on the float64 reference side. The estimate must cover each workload and be reached by the largest one (a
// bound far above every workload would refuse runs that fit).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "benchmarks/kernels_bench/memory.h"
#include "benchmarks/kernels_bench/options.h"
#include "core/allocator.h"
#include "kernels/op_table.h"

namespace parbench {
namespace {

TEST(KernelsMemory, EstimateCoversEveryWorkloadAndTheLargestReachesIt) {
  std::mt19937_64 rng{7};
  for (const auto& shape : kernels_bench::gpt_shapes()) {
    if (!shape.host_default) continue;  // the gpt2 shapes would allocate gigabytes here
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::uint64_t e = dtype_size(dt), bench_bound = kernels_bench::workload_bytes(shape.dims, e, 4),
                          ref_bound = kernels_bench::workload_bytes(shape.dims, 8, 8);
      std::uint64_t bench_most = 0, ref_most = 0;
      for (const auto& entry : optable::op_table()) {
        TrackedAllocator bench{Device{DeviceKind::cpu}}, ref{Device{DeviceKind::cpu}};
        optable::OpCase c({{Device{DeviceKind::cpu}, &bench}, {Device{DeviceKind::cpu}, &ref, true}}, dt, rng);
        optable::Work w = entry.make(c, shape.dims);
        const std::string what = entry.name + " " + std::string(dtype_name(dt)) + " " + shape.name;
        EXPECT_LE(bench.peak_total(), bench_bound) << what;
        EXPECT_LE(ref.peak_total(), ref_bound) << what << " (float64 side)";
        bench_most = std::max<std::uint64_t>(bench_most, bench.peak_total());
        ref_most = std::max<std::uint64_t>(ref_most, ref.peak_total());
      }
      EXPECT_EQ(bench_most, bench_bound) << shape.name << " " << dtype_name(dt);
      EXPECT_EQ(ref_most, ref_bound) << shape.name << " float64 side";
    }
  }
}

// A --linear's estimate covers each of its three parts on both sides and the largest part reaches it, whichever
// of the input, the weight or the output is the largest matrix.
TEST(KernelsMemory, LinearEstimateCoversEachPartAndTheLargestReachesIt) {
  std::mt19937_64 rng{7};
  for (const kernels_bench::LinearShape& l : kernels_bench::parse_linears({"256x64x192", "8x96x32", "64x16x512"}))
    for (DType dt : {DType::f32, DType::bf16}) {
      const std::uint64_t bench_bound = kernels_bench::linear_bytes(l, dtype_size(dt)),
                          ref_bound = kernels_bench::linear_bytes(l, 8);
      std::uint64_t bench_most = 0, ref_most = 0;
      for (auto part : {optable::LinearPart::forward, optable::LinearPart::input_gradient,
                        optable::LinearPart::weight_gradient}) {
        TrackedAllocator bench{Device{DeviceKind::cpu}}, ref{Device{DeviceKind::cpu}};
        optable::OpCase c({{Device{DeviceKind::cpu}, &bench}, {Device{DeviceKind::cpu}, &ref, true}}, dt, rng);
        optable::Work w = optable::linear_workload(c, l.tokens, l.in, l.out, part);
        EXPECT_LE(bench.peak_total(), bench_bound) << l.name() << " " << int(part);
        EXPECT_LE(ref.peak_total(), ref_bound) << l.name() << " " << int(part) << " (float64 side)";
        bench_most = std::max<std::uint64_t>(bench_most, bench.peak_total());
        ref_most = std::max<std::uint64_t>(ref_most, ref.peak_total());
      }
      EXPECT_EQ(bench_most, bench_bound) << l.name() << " " << dtype_name(dt);
      EXPECT_EQ(ref_most, ref_bound) << l.name() << " float64 side";
    }
}

// A GPU holds the benchmarked side alone; a host device holds both sides and the staging of the inputs.
TEST(KernelsMemory, NeedPerDeviceKind) {
  const auto dims = kernels_bench::gpt_shapes()[2].dims;  // gpt2-124M
  const std::uint64_t f32 = kernels_bench::workload_bytes(dims, 4, 4), bf16 = kernels_bench::workload_bytes(dims, 2, 4);
  const std::uint64_t f64 = kernels_bench::workload_bytes(dims, 8, 8);
  // logits and dlogits of 8 x 1024 x 50257 floats, and the losses and targets of 8 x 1024
  EXPECT_EQ(f32, 2ull * 8 * 1024 * 50257 * 4 + 8 * 1024 * 8);
  EXPECT_EQ(kernels_bench::memory_need({dims}, {DType::bf16}, Device{DeviceKind::cuda}), bf16);
  EXPECT_EQ(kernels_bench::memory_need({dims}, {DType::f32, DType::bf16}, Device{DeviceKind::cuda}), f32);
  EXPECT_EQ(kernels_bench::memory_need({dims}, {DType::f32}, Device{DeviceKind::simt}), 3 * f32);
  EXPECT_EQ(kernels_bench::memory_need({dims}, {DType::bf16}, Device{DeviceKind::cpu}), 2 * bf16 + f64);
}

}  // namespace
}  // namespace parbench
