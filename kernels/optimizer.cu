// Optimizer updates: AdamW (fp32 moments, bias-corrected, decoupled weight decay) and SGD.
#include <cmath>

#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

template <class T>
__global__ void adamw_kernel(T* params, const T* grads, float* m, float* v, std::int64_t n, float lr, float beta1,
                             float beta2, float eps, float weight_decay, float c1, float c2) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float g = to_f(grads[i]), p = to_f(params[i]);
    float mi = beta1 * m[i] + (1.f - beta1) * g;
    float vi = beta2 * v[i] + (1.f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] = from_f<T>(p - lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + weight_decay * p));
  }
}

template <class T>
__global__ void sgd_kernel(T* params, const T* grads, std::int64_t n, float lr, float weight_decay) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float p = to_f(params[i]);
    params[i] = from_f<T>(p - lr * (to_f(grads[i]) + weight_decay * p));
  }
}

template <class T>
void adamw_update(T* params, const T* grads, float* m, float* v, std::int64_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int step, void* stream) {
  if (n == 0) return;
  // Bias corrections computed once on the host.
  float c1 = float(1.0 - std::pow(double(beta1), step)), c2 = float(1.0 - std::pow(double(beta2), step));
  PB_LAUNCH(adamw_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)
  (dev(params), dev(grads), m, v, n, lr, beta1, beta2, eps, weight_decay, c1, c2);
  PB_CHECK_LAUNCH();
}

template <class T>
void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(sgd_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(params), dev(grads), n, lr, weight_decay);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                       \
  template void adamw_update<T>(T*, const T*, float*, float*, std::int64_t, float, float, float, float, float, \
                                int, void*);                                                                    \
  template void sgd_update<T>(T*, const T*, std::int64_t, float, float, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)

}  // namespace parbench::PB_KERNEL_NS
