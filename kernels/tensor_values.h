// The values a workload's check rests on, for tensors of any dtype: random inputs, NaN poison in outputs, and the
// relative error of an output against the reference with its default bound.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "core/tensor.h"

namespace parbench::optable {

// Bound on the relative L2 error of an output against the reference: f32 differs by summation order over long
// sums, bf16 outputs by their rounding.
inline double default_tolerance(DType d) { return d == DType::f32 ? 1e-4 : 5e-2; }

// Uniform random values in [lo, hi) / NaN into a host tensor of any dtype. From kParallelFillElements elements on,
// each value is a hash of its index and one draw of `rng`, filled on every core: one draw per element would take
// a minute for a published model's linear layer (a billion elements).
constexpr std::int64_t kParallelFillElements = std::int64_t(1) << 22;
void fill_uniform(Tensor& t, std::mt19937_64& rng, double lo, double hi);
void fill_nan(Tensor& t);
// ||out - ref|| / ||ref|| over the elements (either tensor on any device); infinity when out holds a NaN or an
// infinity (a poisoned element left unwritten).
double rel_l2(const Tensor& out, const Tensor& ref);
double rel_l2(const std::vector<double>& out, const std::vector<double>& ref);

}  // namespace parbench::optable
