// GELU (tanh form) and fused bias + GELU, forward and backward.
#include "kernels/column_sums.h"

namespace parbench::PB_KERNEL_NS {

constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluC = 0.044715f;

__device__ inline float gelu_f(float x) { return 0.5f * x * (1.f + tanhf(kGeluK * (x + kGeluC * x * x * x))); }
__device__ inline float gelu_grad_f(float x) {
  float th = tanhf(kGeluK * (x + kGeluC * x * x * x));
  return 0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * kGeluK * (1.f + 3.f * kGeluC * x * x);
}

template <class T>
__global__ void gelu_forward_kernel(T* out, const T* inp, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f<T>(gelu_f(to_f(inp[i])));
}

template <class T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dinp[i] = from_f<T>(gelu_grad_f(to_f(inp[i])) * to_f(dout[i]));
}

template <class T>
__global__ void bias_gelu_forward_kernel(T* out, const T* inp, const T* bias, std::int64_t n, int C) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f<T>(gelu_f(to_f(inp[i]) + to_f(bias[i % C])));
}

template <class T>
__global__ void bias_gelu_backward_kernel(T* dinp, const T* inp, const T* bias, const T* dout, std::int64_t n, int C) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dinp[i] = from_f<T>(gelu_grad_f(to_f(inp[i]) + to_f(bias[i % C])) * to_f(dout[i]));
}

template <class T>
void gelu_forward(T* out, const T* inp, std::int64_t n, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(gelu_forward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(out), dev(inp), n);
  PB_CHECK_LAUNCH();
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(gelu_backward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(dinp), dev(inp), dev(dout), n);
  PB_CHECK_LAUNCH();
}

template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C, void* stream) {
  std::int64_t n = std::int64_t(N) * C;
  if (n == 0) return;
  PB_LAUNCH(bias_gelu_forward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(out), dev(inp), dev(bias), n, C);
  PB_CHECK_LAUNCH();
}

template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* inp, const T* bias, const T* dout, float* scratch, int N, int C,
                        void* stream) {
  std::int64_t n = std::int64_t(N) * C;
  if (n == 0) return;
  PB_LAUNCH(bias_gelu_backward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)
  (dev(dinp), dev(inp), dev(bias), dev(dout), n, C);
  PB_CHECK_LAUNCH();
  if (dbias) {
    // Summed from the stored dinp, so the bias gradient sees the same rounding as dinp.
    column_sum(dev(dbias), static_cast<const DevT<T>*>(dev(dinp)), N, C, true, scratch, stream);
  }
}

#define PB_INSTANTIATE(T)                                                                                \
  template void gelu_forward<T>(T*, const T*, std::int64_t, void*);                                      \
  template void gelu_backward<T>(T*, const T*, const T*, std::int64_t, void*);                           \
  template void bias_gelu_forward<T>(T*, const T*, const T*, int, int, void*);                           \
  template void bias_gelu_backward<T>(T*, T*, const T*, const T*, const T*, float*, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
