// Reference mean-squared-error loss (the MLP's), forward and backward.
#include <cmath>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void mse_forward(acc_t<T>* loss, const T* pred, const T* target, std::int64_t n) {
  acc_t<T> s = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    acc_t<T> d = load(pred[i]) - load(target[i]);
    s += d * d;
  }
  loss[0] = s / acc_t<T>(n);
}

template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, std::int64_t n, float dloss) {
  acc_t<T> f = acc_t<T>(2) * acc_t<T>(dloss) / acc_t<T>(n);
  for (std::int64_t i = 0; i < n; ++i) dpred[i] = store<T>(f * (load(pred[i]) - load(target[i])));
}

#define PB_INSTANTIATE(T)                                                    \
  template void mse_forward<T>(acc_t<T>*, const T*, const T*, std::int64_t);  \
  template void mse_backward<T>(T*, const T*, const T*, std::int64_t, float);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
