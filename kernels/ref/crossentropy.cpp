// Reference fused softmax + cross-entropy with the logits gradient, and its vocabulary-parallel passes.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref.h"

namespace parbench::ref {
namespace {
// Local column of a global target, or -1 when another shard holds it.
int shard_column(std::int32_t target, std::int64_t vocab_begin, int Vs) {
  std::int64_t c = std::int64_t(target) - vocab_begin;
  return c >= 0 && c < Vs ? int(c) : -1;
}
}  // namespace

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

template <class T>
void crossentropy_shard_max(acc_t<T>* row_max, const T* logits, int N, int Vs) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    const T* x = logits + std::int64_t(r) * Vs;
    A mx = -INFINITY;
    for (int i = 0; i < Vs; ++i) mx = std::max(mx, load(x[i]));
    row_max[r] = mx;
  }
}

template <class T>
void crossentropy_shard_sums(acc_t<T>* sumexp, acc_t<T>* target_logit, const T* logits, const std::int32_t* targets,
                             const acc_t<T>* row_max, int N, int Vs, std::int64_t vocab_begin) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    const T* x = logits + std::int64_t(r) * Vs;
    A sum = 0;
    for (int i = 0; i < Vs; ++i) sum += std::exp(load(x[i]) - row_max[r]);
    int tgt = shard_column(targets[r], vocab_begin, Vs);
    sumexp[r] = sum;
    target_logit[r] = tgt >= 0 ? load(x[tgt]) : A(0);
  }
}

template <class T>
void crossentropy_shard_finish(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets,
                               const acc_t<T>* row_max, const acc_t<T>* sumexp, const acc_t<T>* target_logit, int N,
                               int Vs, std::int64_t vocab_begin, float dloss) {
  using A = acc_t<T>;
  for (int r = 0; r < N; ++r) {
    A mx = row_max[r], sum = sumexp[r];
    losses[r] = std::log(sum) + mx - target_logit[r];
    if (!dlogits) continue;
    int tgt = shard_column(targets[r], vocab_begin, Vs);
    const T* x = logits + std::int64_t(r) * Vs;
    T* d = dlogits + std::int64_t(r) * Vs;  // may alias x: each element is read before it is written
    for (int i = 0; i < Vs; ++i) d[i] = store<T>((std::exp(load(x[i]) - mx) / sum - (i == tgt ? A(1) : A(0))) * dloss);
  }
}

#define PB_INSTANTIATE(T)                                                                                         \
  template void crossentropy_forward_backward<T>(acc_t<T>*, T*, const T*, const std::int32_t*, int, int, float);  \
  template void crossentropy_shard_max<T>(acc_t<T>*, const T*, int, int);                                         \
  template void crossentropy_shard_sums<T>(acc_t<T>*, acc_t<T>*, const T*, const std::int32_t*, const acc_t<T>*, \
                                           int, int, std::int64_t);                                               \
  template void crossentropy_shard_finish<T>(acc_t<T>*, T*, const T*, const std::int32_t*, const acc_t<T>*,      \
                                             const acc_t<T>*, const acc_t<T>*, int, int, std::int64_t, float);
PB_INSTANTIATE(float)
PB_INSTANTIATE(bf16)
PB_INSTANTIATE(double)

}  // namespace parbench::ref
