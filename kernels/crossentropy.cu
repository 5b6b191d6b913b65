// Fused softmax + cross-entropy with the logits gradient: one block per row, logits read twice. The
// vocabulary-parallel version splits it into three passes over a column shard, between which the caller
// combines the per-row statistics over the tensor-parallel ranks.
#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

// dlogits may alias logits: every element is read (max, sum) before the last loop writes it, and each
// element of the last loop is read and written by the same thread.
template <class T>
__global__ void crossentropy_kernel(float* losses, T* dlogits, const T* logits, const std::int32_t* targets, int V,
                                    float dloss) {
  int row = blockIdx.x;
  const T* x = logits + std::int64_t(row) * V;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, to_f(x[i]));
  mx = block_max(mx);
  float s = 0.f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(to_f(x[i]) - mx);
  s = block_sum(s);
  int tgt = targets[row];
  if (threadIdx.x == 0) losses[row] = logf(s) + mx - to_f(x[tgt]);
  __syncthreads();  // the loss read x[tgt] before anyone overwrites it in place
  if (!dlogits) return;
  T* d = dlogits + std::int64_t(row) * V;
  for (int i = threadIdx.x; i < V; i += blockDim.x)
    d[i] = from_f<T>((expf(to_f(x[i]) - mx) / s - (i == tgt ? 1.f : 0.f)) * dloss);
}

template <class T>
void crossentropy_forward_backward(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets, int N,
                                   int V, float dloss, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(crossentropy_kernel<DevT<T>>, N, 256, 0, stream)(losses, dev(dlogits), dev(logits), targets, V, dloss);
  PB_CHECK_LAUNCH();
}

// ---- vocabulary shard: logits (N, Vs) hold the columns [vocab_begin, vocab_begin + Vs); one block per row.

// Local column of a global target, or -1 when another shard holds it.
__device__ inline int shard_column(std::int32_t target, std::int64_t vocab_begin, int Vs) {
  std::int64_t c = std::int64_t(target) - vocab_begin;
  return c >= 0 && c < Vs ? int(c) : -1;
}

template <class T>
__global__ void crossentropy_shard_max_kernel(float* row_max, const T* logits, int Vs) {
  int row = blockIdx.x;
  const T* x = logits + std::int64_t(row) * Vs;
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < Vs; i += blockDim.x) mx = fmaxf(mx, to_f(x[i]));
  mx = block_max(mx);
  if (threadIdx.x == 0) row_max[row] = mx;
}

// row_max is the maximum over the full row (combined over the shards by the caller).
template <class T>
__global__ void crossentropy_shard_sums_kernel(float* sumexp, float* target_logit, const T* logits,
                                               const std::int32_t* targets, const float* row_max, int Vs,
                                               std::int64_t vocab_begin) {
  int row = blockIdx.x;
  const T* x = logits + std::int64_t(row) * Vs;
  float mx = row_max[row];
  float s = 0.f;
  for (int i = threadIdx.x; i < Vs; i += blockDim.x) s += expf(to_f(x[i]) - mx);
  s = block_sum(s);
  if (threadIdx.x == 0) {
    int tgt = shard_column(targets[row], vocab_begin, Vs);
    sumexp[row] = s;
    target_logit[row] = tgt >= 0 ? to_f(x[tgt]) : 0.f;
  }
}

// The loss reads only the statistics, so dlogits may alias logits: each element is read and written by
// the same thread.
template <class T>
__global__ void crossentropy_shard_finish_kernel(float* losses, T* dlogits, const T* logits,
                                                 const std::int32_t* targets, const float* row_max,
                                                 const float* sumexp, const float* target_logit, int Vs,
                                                 std::int64_t vocab_begin, float dloss) {
  int row = blockIdx.x;
  float mx = row_max[row], s = sumexp[row];
  if (threadIdx.x == 0) losses[row] = logf(s) + mx - target_logit[row];
  if (!dlogits) return;
  int tgt = shard_column(targets[row], vocab_begin, Vs);
  const T* x = logits + std::int64_t(row) * Vs;
  T* d = dlogits + std::int64_t(row) * Vs;
  for (int i = threadIdx.x; i < Vs; i += blockDim.x)
    d[i] = from_f<T>((expf(to_f(x[i]) - mx) / s - (i == tgt ? 1.f : 0.f)) * dloss);
}

template <class T>
void crossentropy_shard_max(acc_t<T>* row_max, const T* logits, int N, int Vs, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(crossentropy_shard_max_kernel<DevT<T>>, N, 256, 0, stream)(row_max, dev(logits), Vs);
  PB_CHECK_LAUNCH();
}

template <class T>
void crossentropy_shard_sums(acc_t<T>* sumexp, acc_t<T>* target_logit, const T* logits, const std::int32_t* targets,
                             const acc_t<T>* row_max, int N, int Vs, std::int64_t vocab_begin, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(crossentropy_shard_sums_kernel<DevT<T>>, N, 256, 0, stream)
  (sumexp, target_logit, dev(logits), targets, row_max, Vs, vocab_begin);
  PB_CHECK_LAUNCH();
}

template <class T>
void crossentropy_shard_finish(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets,
                               const acc_t<T>* row_max, const acc_t<T>* sumexp, const acc_t<T>* target_logit, int N,
                               int Vs, std::int64_t vocab_begin, float dloss, void* stream) {
  if (N == 0) return;
  PB_LAUNCH(crossentropy_shard_finish_kernel<DevT<T>>, N, 256, 0, stream)
  (losses, dev(dlogits), dev(logits), targets, row_max, sumexp, target_logit, Vs, vocab_begin, dloss);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                        \
  template void crossentropy_forward_backward<T>(acc_t<T>*, T*, const T*, const std::int32_t*, int, int, float,  \
                                                 void*);                                                         \
  template void crossentropy_shard_max<T>(acc_t<T>*, const T*, int, int, void*);                                 \
  template void crossentropy_shard_sums<T>(acc_t<T>*, acc_t<T>*, const T*, const std::int32_t*, const acc_t<T>*, \
                                           int, int, std::int64_t, void*);                                       \
  template void crossentropy_shard_finish<T>(acc_t<T>*, T*, const T*, const std::int32_t*, const acc_t<T>*,      \
                                             const acc_t<T>*, const acc_t<T>*, int, int, std::int64_t, float,    \
                                             void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
