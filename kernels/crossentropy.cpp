// Fused softmax + cross-entropy with the logits gradient, and its vocabulary-parallel passes: the host half of
// crossentropy.cu (reference, checks and dispatch).
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// Softmax + cross-entropy over logits (N,V) with targets (N): losses (N) = -log softmax[target];
// dlogits (nullable, may alias logits) = (softmax - onehot(target)) * dloss.
template <class T>
void crossentropy_forward_backward(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets, int N,
                                   int V, float dloss, void* stream);
// Vocabulary-parallel cross-entropy: logits (N,Vs) are the columns [vocab_begin, vocab_begin + Vs) of (N,V),
// targets global ids. row_max = local row max; sumexp = sum of exp(logit - row_max) with the combined row_max,
// target_logit = the target's logit if this shard holds it, else 0; losses = log(sumexp) + row_max -
// target_logit and dlogits (nullable, may alias logits) = (softmax - onehot) * dloss with the combined statistics.
template <class T> void crossentropy_shard_max(acc_t<T>* row_max, const T* logits, int N, int Vs, void* stream);
template <class T>
void crossentropy_shard_sums(acc_t<T>* sumexp, acc_t<T>* target_logit, const T* logits, const std::int32_t* targets,
                             const acc_t<T>* row_max, int N, int Vs, std::int64_t vocab_begin, void* stream);
template <class T>
void crossentropy_shard_finish(acc_t<T>* losses, T* dlogits, const T* logits, const std::int32_t* targets,
                               const acc_t<T>* row_max, const acc_t<T>* sumexp, const acc_t<T>* target_logit, int N,
                               int Vs, std::int64_t vocab_begin, float dloss, void* stream);
)

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
                                   int V, float dloss, void*) {
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
void crossentropy_shard_max(acc_t<T>* row_max, const T* logits, int N, int Vs, void*) {
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
                             const acc_t<T>* row_max, int N, int Vs, std::int64_t vocab_begin, void*) {
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
                               int Vs, std::int64_t vocab_begin, float dloss, void*) {
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

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void crossentropy_forward_backward(Tensor& losses, Tensor* dlogits, const Tensor& logits, const Tensor& targets,
                                   float dloss, const Stream& s) {
  Op op{"crossentropy_forward_backward", s};
  DType d = op.storage(logits, "logits");
  op.dtype(losses, "losses", acc_dtype(d));
  op.dtype(targets, "targets", DType::i32);
  int V = int(op.last_dim(logits, "logits"));
  int N = int(logits.numel() / std::max(V, 1));
  op.numel(losses, "losses", N);
  op.numel(targets, "targets", N);
  op.optional(dlogits, "dlogits", d, logits.numel());
  if (s.device().on_host())  // a bad target would read out of bounds
    for (std::int64_t i = 0; i < N; ++i)
      if (targets.ptr<std::int32_t>()[i] < 0 || targets.ptr<std::int32_t>()[i] >= V)
        op.fail("target " + std::to_string(targets.ptr<std::int32_t>()[i]) + " outside [0, " + std::to_string(V) + ")");
  PB_DISPATCH(op, d, crossentropy_forward_backward, losses.ptr<Acc<T>>(), ptr_or_null<T>(dlogits), logits.ptr<T>(),
              targets.ptr<std::int32_t>(), N, V, dloss);
}

namespace {
// The vocabulary-parallel cross-entropy ops' common checks: logits (..., Vs) in a storage dtype, targets (...)
// i32 global ids (non-negative: a negative id would silently belong to no shard), and each statistics tensor
// (...) in the statistics dtype.
struct CeShard {
  DType d;
  int N, Vs;
};
CeShard check_ce_shard(const Op& op, const Tensor& logits, const Tensor* targets, std::int64_t vocab_begin,
                       std::initializer_list<std::pair<const Tensor*, const char*>> stats) {
  DType d = op.storage(logits, "logits");
  int Vs = int(op.last_dim(logits, "logits"));
  int N = int(logits.numel() / std::max(Vs, 1));
  for (auto [t, name] : stats) {
    op.dtype(*t, name, acc_dtype(d));
    op.numel(*t, name, N);
  }
  op.vocab_begin(vocab_begin);
  if (targets) {
    op.dtype(*targets, "targets", DType::i32);
    op.numel(*targets, "targets", N);
    if (op.s.device().on_host())
      for (std::int64_t i = 0; i < N; ++i)
        if (targets->ptr<std::int32_t>()[i] < 0)
          op.fail("target " + std::to_string(targets->ptr<std::int32_t>()[i]) + " is negative");
  }
  return {d, N, Vs};
}
}  // namespace

void crossentropy_shard_max(Tensor& row_max, const Tensor& logits, const Stream& s) {
  Op op{"crossentropy_shard_max", s};
  const CeShard sh = check_ce_shard(op, logits, nullptr, 0, {{&row_max, "row_max"}});
  const DType d = sh.d;
  const int N = sh.N, Vs = sh.Vs;
  PB_DISPATCH(op, d, crossentropy_shard_max, row_max.ptr<Acc<T>>(), logits.ptr<T>(), N, Vs);
}

void crossentropy_shard_sums(Tensor& sumexp, Tensor& target_logit, const Tensor& logits, const Tensor& targets,
                             const Tensor& row_max, std::int64_t vocab_begin, const Stream& s) {
  Op op{"crossentropy_shard_sums", s};
  const CeShard sh = check_ce_shard(op, logits, &targets, vocab_begin,
                                   {{&sumexp, "sumexp"}, {&target_logit, "target_logit"}, {&row_max, "row_max"}});
  const DType d = sh.d;
  const int N = sh.N, Vs = sh.Vs;
  PB_DISPATCH(op, d, crossentropy_shard_sums, sumexp.ptr<Acc<T>>(), target_logit.ptr<Acc<T>>(), logits.ptr<T>(),
              targets.ptr<std::int32_t>(), row_max.ptr<Acc<T>>(), N, Vs, vocab_begin);
}

void crossentropy_shard_finish(Tensor& losses, Tensor* dlogits, const Tensor& logits, const Tensor& targets,
                               const Tensor& row_max, const Tensor& sumexp, const Tensor& target_logit,
                               std::int64_t vocab_begin, float dloss, const Stream& s) {
  Op op{"crossentropy_shard_finish", s};
  const CeShard sh = check_ce_shard(
      op, logits, &targets, vocab_begin,
      {{&losses, "losses"}, {&row_max, "row_max"}, {&sumexp, "sumexp"}, {&target_logit, "target_logit"}});
  const DType d = sh.d;
  const int N = sh.N, Vs = sh.Vs;
  op.optional(dlogits, "dlogits", d, logits.numel());
  PB_DISPATCH(op, d, crossentropy_shard_finish, losses.ptr<Acc<T>>(), ptr_or_null<T>(dlogits), logits.ptr<T>(),
              targets.ptr<std::int32_t>(), row_max.ptr<Acc<T>>(), sumexp.ptr<Acc<T>>(), target_logit.ptr<Acc<T>>(), N,
              Vs, vocab_begin, dloss);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

Work crossentropy_forward_backward_workload(OpCase& c, const OpShape& s) {
  DType t = c.dtype();
  Arg logits = c.in(t, {s.B * s.T, s.V}, -3, 3), targets = c.tokens({s.B * s.T}, s.V),
      losses = c.out(c.acc(), {s.B * s.T}), dlogits = c.out(t, {s.B * s.T, s.V});
  double n = double(s.B) * s.T * s.V;
  const float dloss = 1.f / float(s.B * s.T);
  auto call = [=](int i, const Stream& st) mutable {
    ops::crossentropy_forward_backward(losses[i], &dlogits[i], logits[i], targets[i], dloss, st);
  };
  // Its own pair: the losses are the forward, dlogits their gradient for dloss per row.
  return Work{call, {losses, dlogits}, 6 * n, 3 * n * elem_bytes(t)}.named(
      {{"logits", logits}, {"targets", targets}, {"losses", losses}, {"dlogits", dlogits}}, dloss);
}

}  // namespace parbench::optable
