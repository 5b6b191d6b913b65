// Element types: names, sizes, parsing, and host conversions for the 16-bit floats.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/float16.h"

namespace parbench {

enum class DType { f64, f32, f16, bf16, i32, i8, u8 };

std::string_view dtype_name(DType t);
std::size_t dtype_size(DType t);
bool dtype_is_float(DType t);
// Accepts our names and nccl-tests' ("float", "double", "half", "bfloat16", "int32", "int8", "uint8").
// Throws UsageError naming the token and listing the accepted names.
DType parse_dtype(std::string_view s);
const std::vector<DType>& all_dtypes();

// 16-bit floats on the host: storage types, converted as base/float16.h says (nearest even, canonical NaN).
struct bf16 {
  std::uint16_t bits = 0;
};
struct f16 {
  std::uint16_t bits = 0;
};

inline float bf16_to_float(bf16 v) { return float16::bf16_bits_to_float(v.bits); }
inline bf16 float_to_bf16(float f) { return bf16{float16::float_to_bf16_bits(f)}; }
inline float f16_to_float(f16 v) { return float16::f16_bits_to_float(v.bits); }
inline f16 float_to_f16(float f) { return f16{float16::float_to_f16_bits(f)}; }

// Read / write element i of a typed buffer as double (for references and checks, not hot paths).
double load_as_double(const void* base, DType t, std::size_t i);
void store_from_double(void* base, DType t, std::size_t i, double v);

}  // namespace parbench
