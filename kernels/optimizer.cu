// Optimizer updates: AdamW (fp32 moments, bias-corrected, decoupled weight decay), alone or fused with the fp32
// master copy of bf16 parameters, and SGD. Bandwidth-bound: grid-stride loops, 4 elements per thread with 16-byte
// fp32 loads where every array is aligned.
#include <cmath>

#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

struct AdamWStep {
  float lr, beta1, beta2, eps, weight_decay, c1, c2;  // c1, c2: the bias corrections 1 - beta^step
};

template <class T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};

// One element: the moments and the fp32 value p are updated in place.
__device__ inline void adamw_element(float& p, float g, float& m, float& v, const AdamWStep& a) {
  m = a.beta1 * m + (1.f - a.beta1) * g;
  v = a.beta2 * v + (1.f - a.beta2) * g * g;
  p = p - a.lr * ((m / a.c1) / (sqrtf(v / a.c2) + a.eps) + a.weight_decay * p);
}

// params (storage T) from the fp32 value: the master copy when there is one (master not null), else params itself.
template <class T>
__global__ void adamw_kernel(T* params, const T* grads, float* master, float* m, float* v, std::int64_t n,
                             AdamWStep a, bool vec4) {
  std::int64_t first = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x, stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t quads = vec4 ? n / 4 : 0;
  for (std::int64_t q = first; q < quads; q += stride) {
    Quad<T> g = reinterpret_cast<const Quad<T>*>(grads)[q];
    Quad<float> mq = reinterpret_cast<Quad<float>*>(m)[q], vq = reinterpret_cast<Quad<float>*>(v)[q], pq;
    Quad<T> out;
    if (master) pq = reinterpret_cast<Quad<float>*>(master)[q];
    else {
      Quad<T> pt = reinterpret_cast<Quad<T>*>(params)[q];
#pragma unroll
      for (int e = 0; e < 4; ++e) pq.v[e] = to_f(pt.v[e]);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      adamw_element(pq.v[e], to_f(g.v[e]), mq.v[e], vq.v[e], a);
      out.v[e] = from_f<T>(pq.v[e]);
    }
    reinterpret_cast<Quad<float>*>(m)[q] = mq;
    reinterpret_cast<Quad<float>*>(v)[q] = vq;
    if (master) reinterpret_cast<Quad<float>*>(master)[q] = pq;
    reinterpret_cast<Quad<T>*>(params)[q] = out;
  }
  for (std::int64_t i = quads * 4 + first; i < n; i += stride) {
    float p = master ? master[i] : to_f(params[i]), mi = m[i], vi = v[i];
    adamw_element(p, to_f(grads[i]), mi, vi, a);
    m[i] = mi;
    v[i] = vi;
    if (master) master[i] = p;
    params[i] = from_f<T>(p);
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

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T>
void launch_adamw(T* params, const T* grads, float* master, float* m, float* v, std::int64_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step, void* stream) {
  if (n == 0) return;
  // Bias corrections computed once on the host.
  AdamWStep a{lr, beta1, beta2, eps, weight_decay, float(1.0 - std::pow(double(beta1), step)),
              float(1.0 - std::pow(double(beta2), step))};
  // Quads of T are 4 sizeof(T)-aligned when the 16-byte fp32 arrays are and T's arrays are 4 T-aligned.
  auto quad_ok = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % (4 * sizeof(T)) == 0; };
  bool vec4 = quad_ok(params) && quad_ok(grads) && aligned16(m) && aligned16(v) && (!master || aligned16(master));
  PB_LAUNCH(adamw_kernel<DevT<T>>, grid_for(vec4 ? (n + 3) / 4 : n, 256), 256, 0, stream)
  (dev(params), dev(grads), master, m, v, n, a, vec4);
  PB_CHECK_LAUNCH();
}

template <class T>
void adamw_update(T* params, const T* grads, acc_t<T>* m, acc_t<T>* v, std::int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step, void* stream) {
  launch_adamw(params, grads, static_cast<float*>(nullptr), m, v, n, lr, beta1, beta2, eps, weight_decay, step,
               stream);
}

template <class T>
void adamw_update_master(T* params, const T* grads, acc_t<T>* master, acc_t<T>* m, acc_t<T>* v, std::int64_t n,
                         float lr, float beta1, float beta2, float eps, float weight_decay, int step, void* stream) {
  launch_adamw(params, grads, master, m, v, n, lr, beta1, beta2, eps, weight_decay, step, stream);
}

template <class T>
void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(sgd_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(params), dev(grads), n, lr, weight_decay);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                            \
  template void adamw_update<T>(T*, const T*, acc_t<T>*, acc_t<T>*, std::int64_t, float, float, float, float, float, \
                                int, void*);                                                                         \
  template void adamw_update_master<T>(T*, const T*, acc_t<T>*, acc_t<T>*, acc_t<T>*, std::int64_t, float, float,    \
                                       float, float, float, int, void*);                                             \
  template void sgd_update<T>(T*, const T*, std::int64_t, float, float, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
