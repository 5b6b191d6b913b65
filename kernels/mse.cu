// Mean-squared-error loss (the MLP's), forward (device scalar) and backward.
#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

__global__ void mse_zero_kernel(float* loss) { *loss = 0.f; }

template <class T>
__global__ void mse_forward_kernel(float* loss, const T* pred, const T* target, std::int64_t n) {
  float s = 0.f;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float d = to_f(pred[i]) - to_f(target[i]);
    s += d * d;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) atomicAdd(loss, s / float(n));
}

template <class T>
__global__ void mse_backward_kernel(T* dpred, const T* pred, const T* target, std::int64_t n, float f) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dpred[i] = from_f<T>(f * (to_f(pred[i]) - to_f(target[i])));
}

template <class T>
void mse_forward(acc_t<T>* loss, const T* pred, const T* target, std::int64_t n, void* stream) {
  PB_LAUNCH(mse_zero_kernel, 1, 1, 0, stream)(loss);
  PB_CHECK_LAUNCH();
  if (n == 0) return;
  unsigned grid = std::min(grid_for(n, 256), 1024u);
  PB_LAUNCH(mse_forward_kernel<DevT<T>>, grid, 256, 0, stream)(loss, dev(pred), dev(target), n);
  PB_CHECK_LAUNCH();
}

template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, std::int64_t n, float dloss, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(mse_backward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)
  (dev(dpred), dev(pred), dev(target), n, 2.f * dloss / float(n));
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                      \
  template void mse_forward<T>(acc_t<T>*, const T*, const T*, std::int64_t, void*);            \
  template void mse_backward<T>(T*, const T*, const T*, std::int64_t, float, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
