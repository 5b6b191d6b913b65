// Rotary position embedding (RoPE) in Llama's rotate-half layout (as Hugging Face's Llama): a head of D channels at
// position p pairs channel i with channel i + D/2 (i < D/2) and rotates the pair by p * theta^(-2i/D). The table
// kernel writes the cos and sin of every (position, pair) once; the rotation kernel applies them to (B,T,H,D) q or k
// (any head count), one thread per pair, forward or (the transpose, rotation by minus the angle) backward.
//
// The angle in float. The float product p * inv_freq is off by up to about 7e-4 rad near p = 8192 before its sine is
// taken: inv_freq's rounding (2^-24 of the angle, 4.9e-4) and the product's (half a float step, 2.4e-4 for an angle
// in [4096, 8192)). What matters is the angle modulo 2 pi, so the kernel counts in turns (angle / 2 pi) with
// double-float numbers (a float pair hi + lo, about 48 bits): turns per position f_i = (1 / 2 pi) * r^i with
// r = theta^(-2/D) computed in double on the host and split into two floats, the power by squaring in double-float;
// then p * f_i as hi + lo exactly by fmaf (p < 2^24 is exact in float), the whole turns dropped from hi (exact), and
// what is left, in [-1/2, 1/2], times 2 pi. The roundings left are that sum's (2^-25 turns) and the reduced angle's
// (|angle| <= pi, half a float step: 1.2e-7 rad), so cos and sin are within a few 1e-7 of the float64 formula at any
// position below 2^24 (theta >= 1, so that f_i <= 1 / 2 pi).
#include <cmath>

#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

// hi + lo with |lo| <= ulp(hi) / 2.
struct DoubleFloat {
  float hi, lo;
};

// a * b in double-float: the product of the high parts exactly (fmaf gives its rounding error), the cross terms
// added to that error, then renormalised.
__device__ inline DoubleFloat df_mul(DoubleFloat a, DoubleFloat b) {
  float p = a.hi * b.hi;
  float e = fmaf(a.hi, b.hi, -p);
  e = fmaf(a.hi, b.lo, fmaf(a.lo, b.hi, e));
  float s = p + e;
  return {s, e - (s - p)};
}

// a^n for n >= 0, by squaring.
__device__ inline DoubleFloat df_pow(DoubleFloat a, int n) {
  DoubleFloat r{1.f, 0.f};
  for (; n > 0; n >>= 1) {
    if (n & 1) r = df_mul(r, a);
    a = df_mul(a, a);
  }
  return r;
}

// 2 pi = kTwoPiHi + kTwoPiLo (the float nearest 2 pi and what it misses by).
constexpr float kTwoPiHi = 6.28318548202514648f, kTwoPiLo = -1.74845553e-7f;

// cos_sin (T, half, 2): the cos and sin of (offset + t) * f_i * 2 pi for f_i = turns0 * ratio^i turns per position.
__global__ void rope_table_kernel(float* cos_sin, int T, int half, DoubleFloat ratio, DoubleFloat turns0,
                                  std::int64_t offset) {
  const std::int64_t n = std::int64_t(T) * half;
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < n;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const int t = int(k / half), i = int(k % half);
    const DoubleFloat f = df_mul(turns0, df_pow(ratio, i));
    const float p = float(offset + t);  // exact: positions are below 2^24 (rope_table checks)
    const float hi = p * f.hi;
    const float lo = fmaf(p, f.hi, -hi) + p * f.lo;  // p * f = hi + lo
    const float turns = (hi - rintf(hi)) + lo;        // hi - rintf(hi) is exact
    float s, c;
    sincosf(fmaf(turns, kTwoPiHi, turns * kTwoPiLo), &s, &c);
    cos_sin[2 * k] = c;
    cos_sin[2 * k + 1] = s;
  }
}

// One thread per pair (i, i + D/2) of a head: out = the pair rotated by its position's angle; for the backward
// (`backward`), out += the pair rotated by minus the angle. Heads from `rotated` on pass unturned (a packed q|k|v's
// v heads). Each thread reads its pair before writing it, so out may be inp.
template <class T>
__global__ void rope_rotate_kernel(T* out, const T* inp, const float* cos_sin, int T_, int H, int rotated, int D,
                                   bool backward, std::int64_t pairs) {
  const int half = D / 2;
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < pairs;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = k / half;  // (b, t, h)
    const int i = int(k % half), t = int((row / H) % T_);
    const bool turned = int(row % H) < rotated;
    if (!turned && !backward && out == inp) continue;  // in place, a passed head is already right
    const float* cs = cos_sin + 2 * (std::int64_t(t) * half + i);
    const float c = turned ? cs[0] : 1.f, s = !turned ? 0.f : backward ? -cs[1] : cs[1];
    const std::int64_t a = row * D + i, b = a + half;
    const float x0 = to_f(inp[a]), x1 = to_f(inp[b]);
    float y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
    if (backward) {
      y0 += to_f(out[a]);
      y1 += to_f(out[b]);
    }
    out[a] = from_f<T>(y0);
    out[b] = from_f<T>(y1);
  }
}

template <class T>
void rope_table(T* cos_sin, int T_, int D, double theta, std::int64_t offset, void* stream) {
  const int half = D / 2;
  if (std::int64_t(T_) * half == 0) return;
  auto split = [](double x) {
    const float hi = float(x);
    return DoubleFloat{hi, float(x - double(hi))};
  };
  const DoubleFloat ratio = split(std::pow(theta, -2.0 / D)), turns0 = split(0.15915494309189533577);  // 1 / 2 pi
  PB_LAUNCH(rope_table_kernel, grid_for(std::int64_t(T_) * half, 256), 256, 0, stream)
  (cos_sin, T_, half, ratio, turns0, offset);
  PB_CHECK_LAUNCH();
}

template <class T>
void launch_rope_rotate(T* out, const T* inp, const float* cos_sin, int B, int T_, int H, int R, int D,
                        bool backward, void* stream) {
  const std::int64_t pairs = std::int64_t(B) * T_ * H * (D / 2);
  if (pairs == 0) return;
  PB_LAUNCH(rope_rotate_kernel<DevT<T>>, grid_for(pairs, 256), 256, 0, stream)
  (dev(out), dev(inp), cos_sin, T_, H, R, D, backward, pairs);
  PB_CHECK_LAUNCH();
}

template <class T>
void rope_forward(T* out, const T* inp, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D, void* stream) {
  launch_rope_rotate<T>(out, inp, cos_sin, B, T_, H, R, D, false, stream);
}

template <class T>
void rope_backward(T* dinp, const T* dout, const acc_t<T>* cos_sin, int B, int T_, int H, int R, int D,
                   void* stream) {
  launch_rope_rotate<T>(dinp, dout, cos_sin, B, T_, H, R, D, true, stream);
}

template void rope_table<float>(float*, int, int, double, std::int64_t, void*);
#define PB_INSTANTIATE(T)                                                                       \
  template void rope_forward<T>(T*, const T*, const acc_t<T>*, int, int, int, int, int, void*); \
  template void rope_backward<T>(T*, const T*, const acc_t<T>*, int, int, int, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
