// simt emulator, part 1: CUDA's vector types, 16-bit float types and math intrinsics on the host.
// Everything lives in namespace parbench::simt; kernels see it through device/cuda_compat.h.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/float16.h"

namespace parbench::simt {

// ---- vector types (alignment as in CUDA's vector_types.h, so vector loads keep their layout)
struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
struct alignas(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct int3 { int x, y, z; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(4) ushort2 { unsigned short x, y; };
struct alignas(4) char4 { signed char x, y, z, w; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int3 make_int3(int x, int y, int z) { return {x, y, z}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }

// ---- bit casts and integer intrinsics
template <class To, class From>
inline To simt_bit_cast(const From& f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}
inline int __float_as_int(float f) { return simt_bit_cast<int>(f); }
inline unsigned __float_as_uint(float f) { return simt_bit_cast<unsigned>(f); }
inline float __int_as_float(int i) { return simt_bit_cast<float>(i); }
inline float __uint_as_float(unsigned u) { return simt_bit_cast<float>(u); }
inline long long __double_as_longlong(double d) { return simt_bit_cast<long long>(d); }
inline double __longlong_as_double(long long i) { return simt_bit_cast<double>(i); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }
inline int __mul24(int a, int b) { return (a << 8 >> 8) * (b << 8 >> 8); }

// CUDA's device overloads of min/max (not std::min: mixed int/unsigned follow C's conversions).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(unsigned(a), b); }
inline unsigned max(int a, unsigned b) { return max(unsigned(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, unsigned(b)); }
inline unsigned max(unsigned a, int b) { return max(a, unsigned(b)); }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(float a, double b) { return std::fmin(double(a), b); }
inline double max(float a, double b) { return std::fmax(double(a), b); }
inline double min(double a, float b) { return std::fmin(a, double(b)); }
inline double max(double a, float b) { return std::fmax(a, double(b)); }

// ---- fast-math and rounding-mode intrinsics: host libm at full precision (the GPU versions are
// approximations, so tests compare with tolerances anyway).
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return std::pow(10.0f, x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x), *c = std::cos(x); }
inline void sincosf(float x, float* s, float* c) { *s = std::sin(x), *c = std::cos(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __frsqrt_rn(float x) { return 1.0f / std::sqrt(x); }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x * 0.70710678118654752f); }
inline int __float2int_rn(float x) { return int(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(std::floor(x)); }
inline int __float2int_ru(float x) { return int(std::ceil(x)); }
inline unsigned __float2uint_rn(float x) { return unsigned(std::nearbyint(x)); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }

// ---- 16-bit floats. Storage is one uint16_t (same layout as CUDA's and parbench::bf16/f16), so
// launchers may reinterpret_cast host buffers. The conversions are base/float16.h's (nearest even, NaN canonical).

struct __nv_bfloat16 {
  std::uint16_t __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(float16::float_to_bf16_bits(f)) {}
  __nv_bfloat16(double d) : __x(float16::float_to_bf16_bits(float(d))) {}
  operator float() const { return float16::bf16_bits_to_float(__x); }
};
struct __half {
  std::uint16_t __x;
  __half() = default;
  __half(float f) : __x(float16::float_to_f16_bits(f)) {}
  __half(double d) : __x(float16::float_to_f16_bits(float(d))) {}
  operator float() const { return float16::f16_bits_to_float(__x); }
};
using half = __half;
using nv_bfloat16 = __nv_bfloat16;
struct alignas(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
struct alignas(4) __half2 { __half x, y; };
using half2 = __half2;
using nv_bfloat162 = __nv_bfloat162;

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return float(b); }
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 b; b.__x = u; return b; }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__nv_bfloat16(a), __nv_bfloat16(b)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return {__nv_bfloat16(f.x), __nv_bfloat16(f.y)}; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return {a, b}; }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return {a, a}; }
inline float2 __bfloat1622float2(__nv_bfloat162 v) { return {float(v.x), float(v.y)}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__half(a), __half(b)}; }
inline __half2 __float22half2_rn(float2 f) { return {__half(f.x), __half(f.y)}; }
inline __half2 __halves2half2(__half a, __half b) { return {a, b}; }
inline __half2 __half2half2(__half a) { return {a, a}; }
inline float2 __half22float2(__half2 v) { return {float(v.x), float(v.y)}; }
inline float __low2float(__nv_bfloat162 v) { return float(v.x); }
inline float __high2float(__nv_bfloat162 v) { return float(v.y); }
inline float __low2float(__half2 v) { return float(v.x); }
inline float __high2float(__half2 v) { return float(v.y); }

// Arithmetic rounds once per operation to the 16-bit type, computed through float like CUDA's host
// fallbacks; comparisons are exact (both sides convert to float exactly).
#define PB_SIMT_HALF_OPS(T)                                                                     \
  inline T operator+(T a, T b) { return T(float(a) + float(b)); }                               \
  inline T operator-(T a, T b) { return T(float(a) - float(b)); }                               \
  inline T operator*(T a, T b) { return T(float(a) * float(b)); }                               \
  inline T operator/(T a, T b) { return T(float(a) / float(b)); }                               \
  inline T operator-(T a) { T r = a; r.__x ^= 0x8000u; return r; }                              \
  inline T& operator+=(T& a, T b) { return a = a + b; }                                         \
  inline T& operator-=(T& a, T b) { return a = a - b; }                                         \
  inline T& operator*=(T& a, T b) { return a = a * b; }                                         \
  inline T& operator/=(T& a, T b) { return a = a / b; }                                         \
  inline bool operator==(T a, T b) { return float(a) == float(b); }                             \
  inline bool operator!=(T a, T b) { return float(a) != float(b); }                             \
  inline bool operator<(T a, T b) { return float(a) < float(b); }                               \
  inline bool operator<=(T a, T b) { return float(a) <= float(b); }                             \
  inline bool operator>(T a, T b) { return float(a) > float(b); }                               \
  inline bool operator>=(T a, T b) { return float(a) >= float(b); }                             \
  inline T __hadd(T a, T b) { return a + b; }                                                   \
  inline T __hsub(T a, T b) { return a - b; }                                                   \
  inline T __hmul(T a, T b) { return a * b; }                                                   \
  inline T __hdiv(T a, T b) { return a / b; }                                                   \
  inline T __hneg(T a) { return -a; }                                                           \
  inline T __habs(T a) { T r = a; r.__x &= 0x7fffu; return r; }                                 \
  inline T __hfma(T a, T b, T c) { return T(std::fma(float(a), float(b), float(c))); }          \
  inline T __hmax(T a, T b) { return T(std::fmax(float(a), float(b))); }                        \
  inline T __hmin(T a, T b) { return T(std::fmin(float(a), float(b))); }                        \
  inline bool __heq(T a, T b) { return a == b; }                                                \
  inline bool __hne(T a, T b) { return a != b; }                                                \
  inline bool __hlt(T a, T b) { return a < b; }                                                 \
  inline bool __hle(T a, T b) { return a <= b; }                                                \
  inline bool __hgt(T a, T b) { return a > b; }                                                 \
  inline bool __hge(T a, T b) { return a >= b; }                                                \
  inline bool __hisnan(T a) { return float(a) != float(a); }                                    \
  inline T hexp(T a) { return T(std::exp(float(a))); }                                          \
  inline T hlog(T a) { return T(std::log(float(a))); }                                          \
  inline T hsqrt(T a) { return T(std::sqrt(float(a))); }                                        \
  inline T hrsqrt(T a) { return T(1.0f / std::sqrt(float(a))); }                                \
  inline T htanh(T a) { return T(std::tanh(float(a))); }
PB_SIMT_HALF_OPS(__nv_bfloat16)
PB_SIMT_HALF_OPS(__half)
#undef PB_SIMT_HALF_OPS

#define PB_SIMT_HALF2_OPS(T2)                                                           \
  inline T2 __hadd2(T2 a, T2 b) { return {a.x + b.x, a.y + b.y}; }                         \
  inline T2 __hsub2(T2 a, T2 b) { return {a.x - b.x, a.y - b.y}; }                         \
  inline T2 __hmul2(T2 a, T2 b) { return {a.x * b.x, a.y * b.y}; }                         \
  inline T2 __hfma2(T2 a, T2 b, T2 c) { return {__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; } \
  inline T2 __hmax2(T2 a, T2 b) { return {__hmax(a.x, b.x), __hmax(a.y, b.y)}; }           \
  inline T2 operator+(T2 a, T2 b) { return __hadd2(a, b); }                                \
  inline T2 operator-(T2 a, T2 b) { return __hsub2(a, b); }                                \
  inline T2 operator*(T2 a, T2 b) { return __hmul2(a, b); }
PB_SIMT_HALF2_OPS(__nv_bfloat162)
PB_SIMT_HALF2_OPS(__half2)
#undef PB_SIMT_HALF2_OPS
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 v) { return v.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 v) { return v.y; }
inline __half __low2half(__half2 v) { return v.x; }
inline __half __high2half(__half2 v) { return v.y; }

}  // namespace parbench::simt
