// Token + position embedding, forward and backward (deterministic: no atomics).
#include "kernels/kernel_common.h"
#include "kernels/launchers.h"

namespace parbench::PB_KERNEL_NS {

template <class T>
__global__ void encoder_forward_kernel(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_,
                                       int C) {
  std::int64_t n = std::int64_t(B) * T_ * C;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t bt = i / C;
    int c = int(i % C), t = int(bt % T_);
    out[i] = from_f<T>(to_f(wte[std::int64_t(inp[bt]) * C + c]) + to_f(wpe[std::int64_t(t) * C + c]));
  }
}

// dwpe[t,c] += sum over b: one thread per (t,c).
template <class T>
__global__ void encoder_backward_wpe_kernel(T* dwpe, const T* dout, int B, int T_, int C) {
  std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= std::int64_t(T_) * C) return;
  float s = to_f(dwpe[i]);
  for (int b = 0; b < B; ++b) s += to_f(dout[std::int64_t(b) * T_ * C + i]);
  dwpe[i] = from_f<T>(s);
}

// dwte[inp[bt], c] += dout[bt, c]: one thread per channel walks all tokens in order, so repeated tokens
// never race and the sum order is fixed.
template <class T>
__global__ void encoder_backward_wte_kernel(T* dwte, const T* dout, const std::int32_t* inp, int BT, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int bt = 0; bt < BT; ++bt) {
    T* d = dwte + std::int64_t(inp[bt]) * C + c;
    *d = from_f<T>(to_f(*d) + to_f(dout[std::int64_t(bt) * C + c]));
  }
}

template <class T>
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, void* stream) {
  PB_LAUNCH(encoder_forward_kernel<DevT<T>>, grid_for(std::int64_t(B) * T_ * C, 256), 256, 0, stream)
  (dev(out), inp, dev(wte), dev(wpe), B, T_, C);
  PB_CHECK_LAUNCH();
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, void* stream) {
  PB_LAUNCH(encoder_backward_wpe_kernel<DevT<T>>, ceil_div(std::int64_t(T_) * C, 256), 256, 0, stream)
  (dev(dwpe), dev(dout), B, T_, C);
  PB_CHECK_LAUNCH();
  PB_LAUNCH(encoder_backward_wte_kernel<DevT<T>>, ceil_div(C, 64), 64, 0, stream)(dev(dwte), dev(dout), inp, B * T_, C);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                    \
  template void encoder_forward<T>(T*, const std::int32_t*, const T*, const T*, int, int, int, void*);      \
  template void encoder_backward<T>(T*, T*, const T*, const std::int32_t*, int, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)

}  // namespace parbench::PB_KERNEL_NS
