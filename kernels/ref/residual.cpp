// Reference residual add, forward and backward.
#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = store<T>(load(a[i]) + load(b[i]));
}

template <class T>
void residual_backward(T* da, T* db, const T* dout, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    da[i] = store<T>(load(da[i]) + load(dout[i]));
    db[i] = store<T>(load(db[i]) + load(dout[i]));
  }
}

#define PB_INSTANTIATE(T)                                                     \
  template void residual_forward<T>(T*, const T*, const T*, std::int64_t);    \
  template void residual_backward<T>(T*, T*, const T*, std::int64_t);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
