// Element types: names, sizes, parsing, and host conversions for the 16-bit floats.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace parbench {

enum class DType { f64, f32, f16, bf16, i32, i8, u8 };

std::string_view dtype_name(DType t);
std::size_t dtype_size(DType t);
bool dtype_is_float(DType t);
// Accepts our names and nccl-tests' ("float", "double", "half", "bfloat16", "int32", "int8", "uint8").
// Throws UsageError naming the token and listing the accepted names.
DType parse_dtype(std::string_view s);
const std::vector<DType>& all_dtypes();

// 16-bit floats on the host: storage types with round-to-nearest-even conversion from float.
struct bf16 {
  std::uint16_t bits = 0;
};
struct f16 {
  std::uint16_t bits = 0;
};

inline float bf16_to_float(bf16 v) {
  std::uint32_t u = std::uint32_t(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline bf16 float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return bf16{std::uint16_t((u >> 16) | 0x40)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{std::uint16_t(u >> 16)};
}
float f16_to_float(f16 v);
f16 float_to_f16(float f);

// Read / write element i of a typed buffer as double (for references and checks, not hot paths).
double load_as_double(const void* base, DType t, std::size_t i);
void store_from_double(void* base, DType t, std::size_t i, double v);

}  // namespace parbench
