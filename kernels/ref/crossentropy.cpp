// Reference fused softmax + cross-entropy with the logits gradient.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class T>
void crossentropy_forward_backward(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets, int N,
                                   int V, float dloss) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    const T* x = logits + std::int64_t(r) * V;
    A mx = -INFINITY;
    for (int i = 0; i < V; ++i) mx = std::max(mx, load(x[i]));
    A sum = 0;
    for (int i = 0; i < V; ++i) sum += std::exp(load(x[i]) - mx);
    int tgt = targets[r];
    losses[r] = std::log(sum) + mx - load(x[tgt]);
    if (!dlogits) continue;
    T* d = dlogits + std::int64_t(r) * V;  // may alias x: each element is read before it is written
    for (int i = 0; i < V; ++i) d[i] = store<T>((std::exp(load(x[i]) - mx) / sum - (i == tgt ? A(1) : A(0))) * dloss);
  }
}

#define PB_INSTANTIATE(T) \
  template void crossentropy_forward_backward<T>(acc_t<T>*, T*, const T*, const std::int32_t*, int, int, float);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
