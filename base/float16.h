// The 16-bit float conversions, the one definition every device uses: the host's parbench::bf16 and f16, the
// collectives' reduction (cpu reference and CUDA kernel), the simt device's __nv_bfloat16 and __half, and the
// emulated GPU's cuBLAS. Host and device code (nvcc sees __host__ __device__).
//
// float -> 16 bits rounds to nearest even. The NaN rule, chosen to match what NVIDIA's conversions give
// (__float2bfloat16_rn, __float2half_rn): every NaN becomes the canonical NaN 0x7fff, sign and payload dropped, so
// a cpu reference and a GPU kernel agree bit for bit on NaN too. 16 bits -> float is exact (NaN payloads kept).
// f16: finite values from 65520 up round to infinity; below 2^-14 to subnormals, ties to even (2^-25 goes to 0).
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PB_FLOAT16_HD __host__ __device__
#else
#define PB_FLOAT16_HD
#endif

namespace parbench::float16 {

inline constexpr std::uint16_t kCanonicalNaN = 0x7fff;

PB_FLOAT16_HD inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
PB_FLOAT16_HD inline float float_of(std::uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

PB_FLOAT16_HD inline float bf16_bits_to_float(std::uint16_t b) { return float_of(std::uint32_t(b) << 16); }

PB_FLOAT16_HD inline std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return kCanonicalNaN;
  u += 0x7fffu + ((u >> 16) & 1u);  // to nearest even at bit 16; the largest finite values carry into infinity
  return std::uint16_t(u >> 16);
}

PB_FLOAT16_HD inline float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return float_of(sign | 0x7f800000u | (m << 13));  // infinity, NaN
  if (e != 0) return float_of(sign | ((e + 112u) << 23) | (m << 13));
  const float v = float(m) * (1.0f / 16777216.0f);  // subnormal: m * 2^-24, exact
  return sign ? -v : v;
}

PB_FLOAT16_HD inline std::uint16_t float_to_f16_bits(float f) {
  const std::uint32_t u = bits_of(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return kCanonicalNaN;
  if (a >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // infinity, and what rounds to it (>= 65520)
  if (a >= 0x38800000u) {                                      // a normal half: to nearest even at bit 13
    const std::uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return std::uint16_t(sign | ((r - 0x38000000u) >> 13));
  }
  if (a <= 0x33000000u) return std::uint16_t(sign);  // at most half the smallest subnormal: zero
  // A subnormal half: the float's 24-bit significand shifted to units of 2^-24, to nearest even; rounding up out
  // of the subnormals carries into the exponent field, which is the right encoding of 2^-14.
  const std::uint32_t shift = 126u - (a >> 23), mant = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t m = mant >> shift, rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return std::uint16_t(sign | (m + ((rest > half || (rest == half && (m & 1u))) ? 1u : 0u)));
}

}  // namespace parbench::float16
