// Token + position embedding, forward and backward (deterministic: no atomics), for the full table and
// for a vocabulary shard (tensor parallelism: rows [vocab_begin, vocab_begin + Vs) of the table).
#include <climits>

#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

// Row of the (shard of the) table for a token, or -1 when the token lies outside it.
__device__ inline std::int64_t table_row(std::int32_t token, std::int64_t vocab_begin, int Vs) {
  std::int64_t r = std::int64_t(token) - vocab_begin;
  return r >= 0 && r < Vs ? r : -1;
}

// out = wte row of the token (zero outside the shard) + wpe[t] (when wpe is not null).
template <class T>
__global__ void encoder_forward_kernel(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_,
                                       int C, int Vs, std::int64_t vocab_begin) {
  std::int64_t n = std::int64_t(B) * T_ * C;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t bt = i / C;
    int c = int(i % C), t = int(bt % T_);
    std::int64_t r = table_row(inp[bt], vocab_begin, Vs);
    float v = r >= 0 ? to_f(wte[r * C + c]) : 0.f;
    if (wpe) v += to_f(wpe[std::int64_t(t) * C + c]);
    out[i] = from_f<T>(v);
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

// dwte[row of inp[bt], c] += dout[bt, c]: one thread per channel walks all tokens in order, so repeated
// tokens never race and the sum order is fixed (the same in every shard as in the full table).
template <class T>
__global__ void encoder_backward_wte_kernel(T* dwte, const T* dout, const std::int32_t* inp, int BT, int C, int Vs,
                                            std::int64_t vocab_begin) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int bt = 0; bt < BT; ++bt) {
    std::int64_t r = table_row(inp[bt], vocab_begin, Vs);
    if (r < 0) continue;
    T* d = dwte + r * C + c;
    *d = from_f<T>(to_f(*d) + to_f(dout[std::int64_t(bt) * C + c]));
  }
}

template <class T>
void encoder_forward_shard(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, int Vs,
                           std::int64_t vocab_begin, void* stream) {
  PB_LAUNCH(encoder_forward_kernel<DevT<T>>, grid_for(std::int64_t(B) * T_ * C, 256), 256, 0, stream)
  (dev(out), inp, dev(wte), dev(wpe), B, T_, C, Vs, vocab_begin);
  PB_CHECK_LAUNCH();
}

template <class T>
void encoder_backward_shard(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, int Vs,
                            std::int64_t vocab_begin, void* stream) {
  if (dwpe) {
    PB_LAUNCH(encoder_backward_wpe_kernel<DevT<T>>, ceil_div(std::int64_t(T_) * C, 256), 256, 0, stream)
    (dev(dwpe), dev(dout), B, T_, C);
    PB_CHECK_LAUNCH();
  }
  PB_LAUNCH(encoder_backward_wte_kernel<DevT<T>>, ceil_div(C, 64), 64, 0, stream)
  (dev(dwte), dev(dout), inp, B * T_, C, Vs, vocab_begin);
  PB_CHECK_LAUNCH();
}

// The full table is the shard that starts at 0 and holds every valid token (the dispatch checked them).
template <class T>
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, void* stream) {
  encoder_forward_shard(out, inp, wte, wpe, B, T_, C, INT_MAX, 0, stream);
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, void* stream) {
  encoder_backward_shard(dwte, dwpe, dout, inp, B, T_, C, INT_MAX, 0, stream);
}

#define PB_INSTANTIATE(T)                                                                                       \
  template void encoder_forward<T>(T*, const std::int32_t*, const T*, const T*, int, int, int, void*);         \
  template void encoder_backward<T>(T*, T*, const T*, const std::int32_t*, int, int, int, void*);              \
  template void encoder_forward_shard<T>(T*, const std::int32_t*, const T*, const T*, int, int, int, int,      \
                                         std::int64_t, void*);                                                  \
  template void encoder_backward_shard<T>(T*, T*, const T*, const std::int32_t*, int, int, int, int, std::int64_t, \
                                          void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
