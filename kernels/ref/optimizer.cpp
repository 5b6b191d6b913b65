// Reference optimizer updates: AdamW and SGD.
#include <cmath>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void adamw_update(T* params, const T* grads, acc_t<T>* m, acc_t<T>* v, std::int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step) {
  using A = acc_t<T>;
  A c1 = A(1) - std::pow(A(beta1), A(step)), c2 = A(1) - std::pow(A(beta2), A(step));
  for (std::int64_t i = 0; i < n; ++i) {
    A g = load(grads[i]), p = load(params[i]);
    m[i] = A(beta1) * m[i] + (A(1) - A(beta1)) * g;
    v[i] = A(beta2) * v[i] + (A(1) - A(beta2)) * g * g;
    A mhat = m[i] / c1, vhat = v[i] / c2;
    params[i] = store<T>(p - A(lr) * (mhat / (std::sqrt(vhat) + A(eps)) + A(weight_decay) * p));
  }
}

template <class T>
void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay) {
  using A = acc_t<T>;
  for (std::int64_t i = 0; i < n; ++i) {
    A p = load(params[i]);
    params[i] = store<T>(p - A(lr) * (load(grads[i]) + A(weight_decay) * p));
  }
}

#define PB_INSTANTIATE(T)                                                                                     \
  template void adamw_update<T>(T*, const T*, acc_t<T>*, acc_t<T>*, std::int64_t, float, float, float, float, \
                                float, int);                                                                  \
  template void sgd_update<T>(T*, const T*, std::int64_t, float, float);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
