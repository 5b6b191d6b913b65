// base/float16.h against references written another way: every 16-bit pattern decoded by the format's formula,
// and float -> 16 bits as the nearest representable value computed in double (ties to even), over special values,
// every tie between neighbours and random floats. NaN: always the canonical 0x7fff.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/float16.h"

namespace parbench {
namespace {

using float16::kCanonicalNaN;

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A 16-bit float's value by its definition: `mant_bits` fraction bits, exponent bias `bias`.
double decode(std::uint16_t b, int mant_bits, int exp_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (b >> mant_bits) & ((1 << exp_bits) - 1), m = b & ((1 << mant_bits) - 1);
  const double sign = (b >> 15) ? -1.0 : 1.0;
  if (e == (1 << exp_bits) - 1) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(double(m), 1 - bias - mant_bits);
  return sign * std::ldexp(1.0 + std::ldexp(double(m), -mant_bits), e - bias);
}

// The value float -> 16 bits must give: f rounded to the format's grid in double, ties to even; inf past the top.
double nearest(float f, int mant_bits, int exp_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1, emin = 1 - bias;
  const double d = std::fabs(double(f));
  if (d == 0) return std::signbit(f) ? -0.0 : 0.0;
  int e;
  std::frexp(d, &e);  // d in [2^(e-1), 2^e)
  const int exponent = std::max(e - 1, emin);
  const double q = std::ldexp(1.0, exponent - mant_bits);  // the grid's spacing there
  double r = std::nearbyint(d / q) * q;                      // d / q is exact: f has 24 bits
  if (r >= std::ldexp(1.0, bias + 1)) r = INFINITY;
  return std::signbit(f) ? -r : r;
}

// `convert` (float -> 16 bits of a format with `mant_bits` and `exp_bits`) gives the nearest value, NaN canonical.
void expect_rounded(float f, std::uint16_t (*convert)(float), int mant_bits, int exp_bits, const char* format) {
  const std::uint16_t got = convert(f);
  if (std::isnan(f)) {
    ASSERT_EQ(got, kCanonicalNaN) << format << " of " << f;
    return;
  }
  const double want = nearest(f, mant_bits, exp_bits), have = decode(got, mant_bits, exp_bits);
  ASSERT_EQ(have, want) << format << " of " << f << " gave 0x" << std::hex << got;
  ASSERT_EQ(std::signbit(have), std::signbit(want)) << format << " of " << f;
}
void expect_f16(float f) { expect_rounded(f, float16::float_to_f16_bits, 10, 5, "f16"); }
void expect_bf16(float f) { expect_rounded(f, float16::float_to_bf16_bits, 7, 8, "bf16"); }

TEST(Float16, EveryPatternDecodesByItsFormulaAndEncodesBack) {
  for (unsigned b = 0; b < 65536; ++b) {
    const auto h = std::uint16_t(b);
    const double f16 = decode(h, 10, 5), bf16 = decode(h, 7, 8);
    const float f16_got = float16::f16_bits_to_float(h), bf16_got = float16::bf16_bits_to_float(h);
    if (std::isnan(f16)) {
      ASSERT_TRUE(std::isnan(f16_got)) << b;
      ASSERT_EQ(float16::float_to_f16_bits(f16_got), kCanonicalNaN) << b;
    } else {
      ASSERT_EQ(double(f16_got), f16) << b;
      ASSERT_EQ(std::signbit(f16_got), bool(b >> 15)) << b;
      ASSERT_EQ(float16::float_to_f16_bits(f16_got), h) << b;  // exact values come back unchanged
    }
    if (std::isnan(bf16)) {
      ASSERT_TRUE(std::isnan(bf16_got)) << b;
      ASSERT_EQ(float16::float_to_bf16_bits(bf16_got), kCanonicalNaN) << b;
    } else {
      ASSERT_EQ(double(bf16_got), bf16) << b;
      ASSERT_EQ(float16::float_to_bf16_bits(bf16_got), h) << b;
    }
  }
}

TEST(Float16, SpecialValuesTiesAndOverflow) {
  const std::vector<float> specials = {
      0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, from_bits(0x7f800001u), from_bits(0xffbfffffu),  // signalling
      from_bits(0x00000001u), from_bits(0x807fffffu), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25) /* tie: 0 */,
      std::nextafter(std::ldexp(1.0f, -25), 1.0f), std::ldexp(1.5f, -24) /* tie: to even 2^-23 */,
      std::ldexp(2.5f, -24), std::ldexp(1023.5f, -24) /* tie: up into the normals */, std::ldexp(1.0f, -14),
      65504.0f, 65519.996f, 65520.0f, 1e6f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 1.0f + 1.0f / 256,
      1.0f + 3.0f / 256, from_bits(0x7f7fffffu) /* FLT_MAX: bf16 inf */, from_bits(0x7f7f7fffu),
      from_bits(0x7f7f8000u)};
  for (float f : specials) {
    expect_f16(f);
    expect_bf16(f);
  }
  EXPECT_EQ(float16::float_to_f16_bits(65520.0f), 0x7c00);
  EXPECT_EQ(float16::float_to_f16_bits(-65519.996f), 0xfbff);
  EXPECT_EQ(float16::float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float16::float_to_bf16_bits(from_bits(0x7f7f8000u)), 0x7f80);  // the top tie goes to infinity (even)
  EXPECT_EQ(float16::float_to_bf16_bits(-NAN), kCanonicalNaN);
}

// Every midpoint between neighbouring 16-bit values (as a float, where it is one exactly) and its neighbours one
// float ulp either side: ties to even, the rest to the nearer.
TEST(Float16, EveryTieBetweenNeighbours) {
  for (unsigned b = 0; b + 1 < 0x7c00; ++b) {
    const double mid = (decode(std::uint16_t(b), 10, 5) + decode(std::uint16_t(b + 1), 10, 5)) / 2;
    const float f = float(mid);
    ASSERT_EQ(double(f), mid);
    for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY), -f}) expect_f16(g);
  }
  for (unsigned b = 0; b + 1 < 0x7f80; ++b) {
    const double mid = (decode(std::uint16_t(b), 7, 8) + decode(std::uint16_t(b + 1), 7, 8)) / 2;
    const float f = float(mid);
    ASSERT_EQ(double(f), mid);
    for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY), -f}) expect_bf16(g);
  }
}

TEST(Float16, RandomFloats) {
  std::mt19937 gen(20261202);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 300000; ++i) {
    const float f = from_bits(bits(gen));
    expect_f16(f);
    expect_bf16(f);
    // and where f16 has its values: exponents 2^-27 .. 2^17, random sign and significand
    const std::uint32_t r = bits(gen), exponent = 100u + r % 45u;
    expect_f16(from_bits((r & 0x80000000u) | (exponent << 23) | (bits(gen) & 0x7fffffu)));
  }
}

}  // namespace
}  // namespace parbench
