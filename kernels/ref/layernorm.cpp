// Reference layernorm over the last dimension, saving mean and rstd for the backward pass.
#include <cmath>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void layernorm_forward(T* out, acc_t<T>* mean, acc_t<T>* rstd, const T* inp, const T* weight, const T* bias, int N,
                       int C) {
  using A = acc_t<T>;
  const A eps = A(1e-5);
  for (int r = 0; r < N; ++r) {
    const T* x = inp + std::int64_t(r) * C;
    A m = 0;
    for (int c = 0; c < C; ++c) m += load(x[c]);
    m /= C;
    A var = 0;
    for (int c = 0; c < C; ++c) var += (load(x[c]) - m) * (load(x[c]) - m);
    var /= C;
    A s = A(1) / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c)
      out[std::int64_t(r) * C + c] = store<T>((load(x[c]) - m) * s * load(weight[c]) + load(bias[c]));
    mean[r] = m;
    rstd[r] = s;
  }
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const acc_t<T>* mean,
                        const acc_t<T>* rstd, int N, int C) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    const T* x = inp + std::int64_t(r) * C;
    const T* d = dout + std::int64_t(r) * C;
    A dnorm_mean = 0, dnorm_norm_mean = 0;
    for (int c = 0; c < C; ++c) {
      A norm = (load(x[c]) - mean[r]) * rstd[r];
      A dnorm = load(weight[c]) * load(d[c]);
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int c = 0; c < C; ++c) {
      A norm = (load(x[c]) - mean[r]) * rstd[r];
      A dnorm = load(weight[c]) * load(d[c]);
      dbias[c] = store<T>(load(dbias[c]) + load(d[c]));
      dweight[c] = store<T>(load(dweight[c]) + norm * load(d[c]));
      T& di = dinp[std::int64_t(r) * C + c];
      di = store<T>(load(di) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rstd[r]);
    }
  }
}

#define PB_INSTANTIATE(T)                                                                                     \
  template void layernorm_forward<T>(T*, acc_t<T>*, acc_t<T>*, const T*, const T*, const T*, int, int);      \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const acc_t<T>*, const acc_t<T>*, \
                                      int, int);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
