// Reference GELU (tanh form) and fused bias + GELU, forward and backward.
#include <vector>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void gelu_forward(T* out, const T* inp, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = store<T>(gelu(load(inp[i])));
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = store<T>(gelu_grad(load(inp[i])) * load(dout[i]));
}

template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C) {
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < C; ++c) {
      std::int64_t i = std::int64_t(r) * C + c;
      out[i] = store<T>(gelu(load(inp[i]) + load(bias[c])));
    }
}

template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* inp, const T* bias, const T* dout, int N, int C) {
  std::vector<acc_t<T>> db(C, 0);
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < C; ++c) {
      std::int64_t i = std::int64_t(r) * C + c;
      acc_t<T> g = gelu_grad(load(inp[i]) + load(bias[c])) * load(dout[i]);
      db[c] += g;
      dinp[i] = store<T>(g);
    }
  if (dbias)
    for (int c = 0; c < C; ++c) dbias[c] = store<T>(load(dbias[c]) + db[c]);
}

#define PB_INSTANTIATE(T)                                                            \
  template void gelu_forward<T>(T*, const T*, std::int64_t);                         \
  template void gelu_backward<T>(T*, const T*, const T*, std::int64_t);              \
  template void bias_gelu_forward<T>(T*, const T*, const T*, int, int);              \
  template void bias_gelu_backward<T>(T*, T*, const T*, const T*, const T*, int, int);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
