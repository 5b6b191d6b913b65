// RMSNorm over the last dimension, plain and fused with the residual add before it (Llama's h = x + r; y =
// rmsnorm(h)): one warp per row; saves rstd for the backward pass. The backward's dinp takes a warp per row (the
// fused one adds the residual stream's gradient dh and writes it to both branches), dweight a two-pass column sum
// (kernels/column_sums.h).
#include "kernels/acc_type.h"
#include "kernels/column_sums.h"

namespace parbench::PB_KERNEL_NS {

constexpr int kRmsRowsPerBlock = 8;  // 8 warps of 32

// out = h * rstd * weight with h = inp, or, where `residual` is given, h = inp + residual rounded to T and written to
// `hout` (each lane reads back only what it wrote).
template <class T>
__global__ void rmsnorm_forward_kernel(T* out, T* hout, float* rstd, const T* inp, const T* residual,
                                       const T* weight, int N, int C, float eps) {
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * kRmsRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // whole warps leave together: no warp collective is left half-populated
  const std::int64_t base = std::int64_t(row) * C;
  const T* h = inp + base;
  float ss = 0.f;
  if (residual) {
    for (int c = lane; c < C; c += 32) {
      T v = from_f<T>(to_f(h[c]) + to_f(residual[base + c]));
      hout[base + c] = v;
      ss += to_f(v) * to_f(v);
    }
    h = hout + base;
  } else {
    for (int c = lane; c < C; c += 32) ss += to_f(h[c]) * to_f(h[c]);
  }
  float r = 1.f / sqrtf(warp_sum(ss) / C + eps);
  T* o = out + base;
  for (int c = lane; c < C; c += 32) o[c] = from_f<T>(to_f(h[c]) * r * to_f(weight[c]));
  if (lane == 0) rstd[row] = r;
}

// dinp += g per row, g = (dnorm - norm * mean(dnorm * norm)) * rstd with dnorm = weight * dout; where `dh` is given
// (the fused backward) g + dh goes into both dinp and dres.
template <class T>
__global__ void rmsnorm_backward_dinp_kernel(T* dinp, T* dres, const T* dh, const T* dout, const T* inp,
                                             const T* weight, const float* rstd, int N, int C) {
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * kRmsRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;
  const std::int64_t base = std::int64_t(row) * C;
  const T* x = inp + base;
  const T* d = dout + base;
  float r = rstd[row];
  float a = 0.f;
  for (int c = lane; c < C; c += 32) a += to_f(weight[c]) * to_f(d[c]) * to_f(x[c]) * r;
  float dnorm_norm_mean = warp_sum(a) / C;
  for (int c = lane; c < C; c += 32) {
    float g = (to_f(weight[c]) * to_f(d[c]) - to_f(x[c]) * r * dnorm_norm_mean) * r;
    if (dh) {
      g += to_f(dh[base + c]);
      dres[base + c] = from_f<T>(to_f(dres[base + c]) + g);
    }
    dinp[base + c] = from_f<T>(to_f(dinp[base + c]) + g);
  }
}

// The weight gradient's term of row r, column c: norm * dout (kernels/column_sums.h).
template <class T>
struct RmsnormParamTerms {
  static constexpr int sums = 1;
  const T* dout;
  const T* inp;
  const float* rstd;
  int C;
  __device__ void add(int r, int c, float* s) const {
    std::int64_t i = std::int64_t(r) * C + c;
    s[0] += to_f(inp[i]) * rstd[r] * to_f(dout[i]);
  }
};

template <class T>
void launch_rmsnorm_forward(T* out, T* hout, float* rstd, const T* inp, const T* residual, const T* weight, int N,
                            int C, float eps, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(rmsnorm_forward_kernel<DevT<T>>, ceil_div(N, kRmsRowsPerBlock), 32 * kRmsRowsPerBlock, 0, stream)
  (dev(out), dev(hout), rstd, dev(inp), dev(residual), dev(weight), N, C, eps);
  PB_CHECK_LAUNCH();
}

template <class T>
void launch_rmsnorm_backward(T* dinp, T* dres, T* dweight, const T* dh, const T* dout, const T* inp, const T* weight,
                             const float* rstd, float* scratch, int N, int C, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(rmsnorm_backward_dinp_kernel<DevT<T>>, ceil_div(N, kRmsRowsPerBlock), 32 * kRmsRowsPerBlock, 0, stream)
  (dev(dinp), dev(dres), dev(dh), dev(dout), dev(inp), dev(weight), rstd, N, C);
  PB_CHECK_LAUNCH();
  RmsnormParamTerms<DevT<T>> terms{dev(dout), dev(inp), rstd, C};
  column_sums(dev(dweight), static_cast<DevT<T>*>(nullptr), terms, N, C, true, scratch, stream);
}

template <class T>
void rmsnorm_forward(T* out, acc_t<T>* rstd, const T* inp, const T* weight, int N, int C, double eps, void* stream) {
  launch_rmsnorm_forward<T>(out, nullptr, rstd, inp, nullptr, weight, N, C, float(eps), stream);
}

template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const acc_t<T>* rstd,
                      float* scratch, int N, int C, void* stream) {
  launch_rmsnorm_backward<T>(dinp, nullptr, dweight, nullptr, dout, inp, weight, rstd, scratch, N, C, stream);
}

template <class T>
void rmsnorm_residual_forward(T* out, T* h, acc_t<T>* rstd, const T* inp, const T* residual, const T* weight, int N,
                              int C, double eps, void* stream) {
  launch_rmsnorm_forward<T>(out, h, rstd, inp, residual, weight, N, C, float(eps), stream);
}

template <class T>
void rmsnorm_residual_backward(T* dinp, T* dresidual, T* dweight, const T* dh, const T* dout, const T* h,
                               const T* weight, const acc_t<T>* rstd, float* scratch, int N, int C, void* stream) {
  launch_rmsnorm_backward<T>(dinp, dresidual, dweight, dh, dout, h, weight, rstd, scratch, N, C, stream);
}

#define PB_INSTANTIATE(T)                                                                                          \
  template void rmsnorm_forward<T>(T*, acc_t<T>*, const T*, const T*, int, int, double, void*);                    \
  template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const acc_t<T>*, float*, int, int, void*); \
  template void rmsnorm_residual_forward<T>(T*, T*, acc_t<T>*, const T*, const T*, const T*, int, int, double,    \
                                            void*);                                                                \
  template void rmsnorm_residual_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const acc_t<T>*,  \
                                             float*, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
