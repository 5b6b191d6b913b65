// Reference token + position embedding, forward and backward.
#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T_; ++t) {
      const T* e = wte + std::int64_t(inp[b * T_ + t]) * C;
      const T* p = wpe + std::int64_t(t) * C;
      T* o = out + (std::int64_t(b) * T_ + t) * C;
      for (int c = 0; c < C; ++c) o[c] = store<T>(load(e[c]) + load(p[c]));
    }
}

template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T_; ++t) {
      const T* d = dout + (std::int64_t(b) * T_ + t) * C;
      T* e = dwte + std::int64_t(inp[b * T_ + t]) * C;
      T* p = dwpe + std::int64_t(t) * C;
      for (int c = 0; c < C; ++c) {
        e[c] = store<T>(load(e[c]) + load(d[c]));
        p[c] = store<T>(load(p[c]) + load(d[c]));
      }
    }
}

#define PB_INSTANTIATE(T)                                                                             \
  template void encoder_forward<T>(T*, const std::int32_t*, const T*, const T*, int, int, int); \
  template void encoder_backward<T>(T*, T*, const T*, const std::int32_t*, int, int, int);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
