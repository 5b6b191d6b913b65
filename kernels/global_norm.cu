// Gradient norm (sum of squares, accumulated across tensors) and clipping by the global norm,
// both reading and writing the norm on the device so no host sync is needed.
#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

__global__ void set_scalar_kernel(float* out, float value) { *out = value; }

// Block partial sums added atomically; the order of the (few) block additions varies between runs.
template <class T>
__global__ void norm_squared_kernel(float* out, const T* x, std::int64_t n) {
  float s = 0.f;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float v = to_f(x[i]);
    s += v * v;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) atomicAdd(out, s);
}

template <class T>
__global__ void clip_kernel(T* x, std::int64_t n, const float* norm_sq, float max_norm) {
  float norm = sqrtf(*norm_sq);
  if (!(norm > max_norm)) return;
  float scale = max_norm / norm;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    x[i] = from_f<T>(to_f(x[i]) * scale);
}

template <class T>
void norm_squared(acc_t<T>* out, const T* x, std::int64_t n, bool accumulate, void* stream) {
  if (!accumulate) {
    PB_LAUNCH(set_scalar_kernel, 1, 1, 0, stream)(out, 0.f);
    PB_CHECK_LAUNCH();
  }
  if (n == 0) return;
  // At most 1024 blocks so the atomics stay few.
  unsigned grid = std::min(grid_for(n, 256), 1024u);
  PB_LAUNCH(norm_squared_kernel<DevT<T>>, grid, 256, 0, stream)(out, dev(x), n);
  PB_CHECK_LAUNCH();
}

template <class T>
void clip_by_norm(T* x, std::int64_t n, const acc_t<T>* norm_sq, float max_norm, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(clip_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(x), n, norm_sq, max_norm);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                               \
  template void norm_squared<T>(acc_t<T>*, const T*, std::int64_t, bool, void*);        \
  template void clip_by_norm<T>(T*, std::int64_t, const acc_t<T>*, float, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
