// Layernorm over the last dimension: one warp per row; saves mean and rstd for the backward pass. The backward's
// dinp takes a warp per row, dweight and dbias two-pass column sums (kernels/column_sums.h).
#include "kernels/acc_type.h"
#include "kernels/column_sums.h"

namespace parbench::PB_KERNEL_NS {

constexpr int kRowsPerBlock = 8;  // 8 warps of 32

template <class T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                                         const T* bias, int N, int C) {
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;  // whole warps leave together: no warp collective is left half-populated
  const T* x = inp + std::int64_t(row) * C;
  float s = 0.f;
  for (int c = lane; c < C; c += 32) s += to_f(x[c]);
  float m = warp_sum(s) / C;
  float v = 0.f;
  for (int c = lane; c < C; c += 32) {
    float d = to_f(x[c]) - m;
    v += d * d;
  }
  float r = 1.f / sqrtf(warp_sum(v) / C + 1e-5f);
  T* o = out + std::int64_t(row) * C;
  for (int c = lane; c < C; c += 32) o[c] = from_f<T>((to_f(x[c]) - m) * r * to_f(weight[c]) + to_f(bias[c]));
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// dinp += per row: one warp per row.
template <class T>
__global__ void layernorm_backward_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                               const float* mean, const float* rstd, int N, int C) {
  int lane = threadIdx.x % 32;
  int row = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  if (row >= N) return;
  const T* x = inp + std::int64_t(row) * C;
  const T* d = dout + std::int64_t(row) * C;
  float m = mean[row], r = rstd[row];
  float a = 0.f, b = 0.f;
  for (int c = lane; c < C; c += 32) {
    float dnorm = to_f(weight[c]) * to_f(d[c]);
    a += dnorm;
    b += dnorm * (to_f(x[c]) - m) * r;
  }
  float dnorm_mean = warp_sum(a) / C, dnorm_norm_mean = warp_sum(b) / C;
  T* di = dinp + std::int64_t(row) * C;
  for (int c = lane; c < C; c += 32) {
    float norm = (to_f(x[c]) - m) * r;
    float dnorm = to_f(weight[c]) * to_f(d[c]);
    di[c] = from_f<T>(to_f(di[c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r);
  }
}

// The parameter gradients' terms of row r, column c: dweight gets norm * dout, dbias dout (kernels/column_sums.h).
template <class T>
struct LayernormParamTerms {
  static constexpr int sums = 2;
  const T* dout;
  const T* inp;
  const float* mean;
  const float* rstd;
  int C;
  __device__ void add(int r, int c, float* s) const {
    std::int64_t i = std::int64_t(r) * C + c;
    float d = to_f(dout[i]);
    s[0] += (to_f(inp[i]) - mean[r]) * rstd[r] * d;
    s[1] += d;
  }
};

template <class T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight, const T* bias, int N,
                       int C, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(layernorm_forward_kernel<DevT<T>>, ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream)
  (dev(out), mean, rstd, dev(inp), dev(weight), dev(bias), N, C);
  PB_CHECK_LAUNCH();
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const acc_t<T>* mean, const acc_t<T>* rstd, float* scratch, int N, int C, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(layernorm_backward_dinp_kernel<DevT<T>>, ceil_div(N, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream)
  (dev(dinp), dev(dout), dev(inp), dev(weight), mean, rstd, N, C);
  PB_CHECK_LAUNCH();
  LayernormParamTerms<DevT<T>> terms{dev(dout), dev(inp), mean, rstd, C};
  column_sums(dev(dweight), dev(dbias), terms, N, C, true, scratch, stream);
}

#define PB_INSTANTIATE(T)                                                                                         \
  template void layernorm_forward<T>(T*, acc_t<T>*, acc_t<T>*, const T*, const T*, const T*, int, int, void*);    \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const acc_t<T>*, const acc_t<T>*, \
                                      float*, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
