// DType names, sizes, parsing and 16-bit float conversions.
#include "base/dtype.h"

#include <cmath>

#include "base/error.h"
#include "base/text.h"

namespace parbench {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::size_t size;
  bool is_float;
  std::string_view aliases[3];
};
constexpr DTypeInfo kInfo[] = {
    {DType::f64, "f64", 8, true, {"double", "float64", ""}},
    {DType::f32, "f32", 4, true, {"float", "float32", ""}},
    {DType::f16, "f16", 2, true, {"half", "float16", ""}},
    {DType::bf16, "bf16", 2, true, {"bfloat16", "", ""}},
    {DType::i32, "i32", 4, false, {"int32", "int", ""}},
    {DType::i8, "i8", 1, false, {"int8", "char", ""}},
    {DType::u8, "u8", 1, false, {"uint8", "", ""}},
};
const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }
}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
std::size_t dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) { return info(t).is_float; }

DType parse_dtype(std::string_view s) {
  for (const auto& i : kInfo) {
    if (s == i.name) return i.type;
    for (auto a : i.aliases)
      if (!a.empty() && s == a) return i.type;
  }
  auto with_alias = [](const auto& i) { return std::string(i.name) + " (" + std::string(i.aliases[0]) + ")"; };
  throw UsageError("unknown data type '" + std::string(s) + "'; accepted: " + join(kInfo, ", ", with_alias));
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = {DType::f64, DType::f32, DType::f16, DType::bf16,
                                         DType::i32, DType::i8,  DType::u8};
  return all;
}

double load_as_double(const void* base, DType t, std::size_t i) {
  switch (t) {
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f16: return f16_to_float(static_cast<const f16*>(base)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const bf16*>(base)[i]);
    case DType::i32: return static_cast<const std::int32_t*>(base)[i];
    case DType::i8: return static_cast<const std::int8_t*>(base)[i];
    case DType::u8: return static_cast<const std::uint8_t*>(base)[i];
  }
  return 0;
}

void store_from_double(void* base, DType t, std::size_t i, double v) {
  switch (t) {
    case DType::f64: static_cast<double*>(base)[i] = v; break;
    case DType::f32: static_cast<float*>(base)[i] = float(v); break;
    case DType::f16: static_cast<f16*>(base)[i] = float_to_f16(float(v)); break;
    case DType::bf16: static_cast<bf16*>(base)[i] = float_to_bf16(float(v)); break;
    // Integers through int64: a value out of the type's range wraps as the type's own arithmetic does (a double
    // converted straight to a narrower integer it does not fit is undefined).
    case DType::i32: static_cast<std::int32_t*>(base)[i] = std::int32_t(std::int64_t(v)); break;
    case DType::i8: static_cast<std::int8_t*>(base)[i] = std::int8_t(std::int64_t(v)); break;
    case DType::u8: static_cast<std::uint8_t*>(base)[i] = std::uint8_t(std::int64_t(v)); break;
  }
}

}  // namespace parbench
