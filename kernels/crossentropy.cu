// Fused softmax + cross-entropy with the logits gradient: one block per row, logits read twice.
#include "kernels/kernel_common.h"
#include "kernels/launchers.h"

namespace parbench::PB_KERNEL_NS {

// dlogits may alias logits: every element is read (max, sum) before the last loop writes it, and each
// element of the last loop is read and written by the same thread.
template <class T>
__global__ void crossentropy_kernel(float* losses, T* dlogits, const T* logits, const std::int32_t* targets, int V,
                                    float dloss) {
  int row = blockIdx.x;
  const T* x = logits + std::int64_t(row) * V;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, to_f(x[i]));
  mx = block_max(mx);
  float s = 0.f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(to_f(x[i]) - mx);
  s = block_sum(s);
  int tgt = targets[row];
  if (threadIdx.x == 0) losses[row] = logf(s) + mx - to_f(x[tgt]);
  __syncthreads();  // the loss read x[tgt] before anyone overwrites it in place
  if (!dlogits) return;
  T* d = dlogits + std::int64_t(row) * V;
  for (int i = threadIdx.x; i < V; i += blockDim.x)
    d[i] = from_f<T>((expf(to_f(x[i]) - mx) / s - (i == tgt ? 1.f : 0.f)) * dloss);
}

template <class T>
void crossentropy_forward_backward(float* losses, T* dlogits, const T* logits, const std::int32_t* targets, int N,
                                   int V, float dloss, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(crossentropy_kernel<DevT<T>>, N, 256, 0, stream)(losses, dev(dlogits), dev(logits), targets, V, dloss);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T) \
  template void crossentropy_forward_backward<T>(float*, T*, const T*, const std::int32_t*, int, int, float, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)

}  // namespace parbench::PB_KERNEL_NS
