// Residual add, forward and backward (the backward adds the gradient into both branches).
#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

template <class T>
__global__ void residual_forward_kernel(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f<T>(to_f(a[i]) + to_f(b[i]));
}

template <class T>
__global__ void residual_backward_kernel(T* da, T* db, const T* dout, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float d = to_f(dout[i]);
    da[i] = from_f<T>(to_f(da[i]) + d);
    db[i] = from_f<T>(to_f(db[i]) + d);
  }
}

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t n, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(residual_forward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(out), dev(a), dev(b), n);
  PB_CHECK_LAUNCH();
}

template <class T>
void residual_backward(T* da, T* db, const T* dout, std::int64_t n, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(residual_backward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(da), dev(db), dev(dout), n);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                 \
  template void residual_forward<T>(T*, const T*, const T*, std::int64_t, void*);        \
  template void residual_backward<T>(T*, T*, const T*, std::int64_t, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
