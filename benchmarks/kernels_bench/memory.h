// bench_kernels' memory estimate: the bytes one workload of the op table holds at a shape, in closed form, so a
// run too large for the device (or for --max-memory) is refused before anything is allocated. Only one workload
// lives at a time (each benchmark makes its own, checks it, then makes it again for the timing), so the need is
// the largest workload. tests/benchmarks/test_kernels_memory.cpp checks the estimate against every workload's
// allocations.
#pragma once
#include <cstdint>
#include <vector>

#include "core/device.h"
#include "base/dtype.h"
#include "benchmarks/kernels_bench/options.h"
#include "kernels/op_params.h"

namespace parbench::kernels_bench {

// Bytes of the largest workload's tensors on one side: floating-point tensors of `elem_bytes` (2 bf16, 4 f32, 8 on
// the float64 reference side), statistics of `acc_bytes` (4, or 8 on the float64 side), tokens of 4 bytes.
std::uint64_t workload_bytes(const optable::OpShape& s, std::uint64_t elem_bytes, std::uint64_t acc_bytes);

// What a run of these shapes and dtypes needs on `dev`: the benchmarked side alone on a GPU; on host devices the
// benchmarked side, the reference side (float64 on cpu) and the host staging of the inputs, all in host memory.
std::uint64_t memory_need(const std::vector<optable::OpShape>& shapes, const std::vector<DType>& dtypes,
                          const Device& dev);

// The same for --linear: the bytes of a linear's largest part (optable::linear_workload) on one side, and the need.
std::uint64_t linear_bytes(const LinearShape& l, std::uint64_t elem_bytes);
std::uint64_t memory_need(const std::vector<LinearShape>& linears, const std::vector<DType>& dtypes,
                          const Device& dev);

}  // namespace parbench::kernels_bench
