// SwiGLU, Llama's MLP activation, with the gate and up projections fused in one matmul: a row of inp holds gate
// (F channels) then up (F channels); out = silu(gate) * up. One thread per output channel, forward and backward
// (which reads the pair it differentiates and writes both of its gradients, so no two threads touch one element).
//
// The sigmoid takes exp of a non-positive number only: e = exp(-|g|) is in (0, 1], so 1 / (1 + e) and e / (1 + e)
// are sigmoid(g) and 1 - sigmoid(g) (or the other way round for g < 0) without overflow at any finite g, and the
// backward's 1 - sigmoid(g) is not the cancellation of two numbers near 1.
#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

// sigmoid(g) and 1 - sigmoid(g).
struct Sigmoid {
  float s, rest;
};
__device__ inline Sigmoid sigmoid_f(float g) {
  const float e = expf(-fabsf(g));
  const float p = 1.f / (1.f + e), q = e * p;
  return g >= 0.f ? Sigmoid{p, q} : Sigmoid{q, p};
}

// out[k] = silu(gate) * up for output k = (row, j): gate = inp[row, j], up = inp[row, F + j].
template <class T>
__global__ void swiglu_forward_kernel(T* out, const T* inp, int F, std::int64_t n) {
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < n;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t a = (k / F) * 2 * F + k % F;
    const float g = to_f(inp[a]), u = to_f(inp[a + F]);
    out[k] = from_f<T>(g * sigmoid_f(g).s * u);
  }
}

// dgate = dout * up * silu'(gate), silu'(g) = s (1 + g (1 - s)); dup = dout * silu(gate). Overwrites dinp.
template <class T>
__global__ void swiglu_backward_kernel(T* dinp, const T* inp, const T* dout, int F, std::int64_t n) {
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < n;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t a = (k / F) * 2 * F + k % F;
    const float g = to_f(inp[a]), u = to_f(inp[a + F]), dy = to_f(dout[k]);
    const Sigmoid sg = sigmoid_f(g);
    dinp[a] = from_f<T>(dy * u * sg.s * (1.f + g * sg.rest));
    dinp[a + F] = from_f<T>(dy * g * sg.s);
  }
}

template <class T>
void swiglu_forward(T* out, const T* inp, int N, int F, void* stream) {
  const std::int64_t n = std::int64_t(N) * F;
  if (n == 0) return;
  PB_LAUNCH(swiglu_forward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(out), dev(inp), F, n);
  PB_CHECK_LAUNCH();
}

template <class T>
void swiglu_backward(T* dinp, const T* inp, const T* dout, int N, int F, void* stream) {
  const std::int64_t n = std::int64_t(N) * F;
  if (n == 0) return;
  PB_LAUNCH(swiglu_backward_kernel<DevT<T>>, grid_for(n, 256), 256, 0, stream)(dev(dinp), dev(inp), dev(dout), F, n);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                  \
  template void swiglu_forward<T>(T*, const T*, int, int, void*);          \
  template void swiglu_backward<T>(T*, const T*, const T*, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
