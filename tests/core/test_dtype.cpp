// DType names, parsing and 16-bit conversions.
#include <gtest/gtest.h>

#include <cmath>

#include "base/dtype.h"
#include "base/error.h"

using namespace parbench;

TEST(DType, NamesSizesAndAliases) {
  EXPECT_EQ(parse_dtype("float"), DType::f32);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("half"), DType::f16);
  EXPECT_EQ(parse_dtype("u8"), DType::u8);
  for (DType t : all_dtypes()) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i8), 1u);
}

TEST(DType, UnknownNameIsUsageErrorNamingToken) {
  try {
    parse_dtype("float17");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'float17'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos);
  }
}

TEST(DType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between bf16 1.0 and 1.0078125: ties to even -> 1.0
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  // 1 + 3*2^-8 lies between 1.0078125 (odd) and 1.015625 (even) -> 1.015625
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.015625f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(DType, F16RoundTripAndRounding) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(f16_to_float(float_to_f16(v)), v) << v;
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(70000.0f))));
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even -> 1
  EXPECT_EQ(f16_to_float(float_to_f16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(f16_to_float(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
}
