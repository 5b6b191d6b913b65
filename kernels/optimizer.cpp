// Optimizer updates, AdamW and SGD: the host half of optimizer.cu (reference, checks and dispatch).
#include <cmath>

#include "kernels/dispatch.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"

PB_OP_SIGNATURES(
// AdamW (decoupled weight decay, bias-corrected, step counts from 1); m, v are the moment estimates.
template <class T>
void adamw_update(T* params, const T* grads, acc_t<T>* m, acc_t<T>* v, std::int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step, void* stream);
// The same on the fp32 master copy (acc_t), params = master rounded to T.
template <class T>
void adamw_update_master(T* params, const T* grads, acc_t<T>* master, acc_t<T>* m, acc_t<T>* v, std::int64_t n,
                         float lr, float beta1, float beta2, float eps, float weight_decay, int step, void* stream);
// Plain SGD with weight decay: p -= lr * (g + wd * p).
template <class T>
void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay, void* stream);
)

namespace parbench::ref {

template <class T>
void adamw_update(T* params, const T* grads, acc_t<T>* m, acc_t<T>* v, std::int64_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int step, void*) {
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
void adamw_update_master(T* params, const T* grads, acc_t<T>* master, acc_t<T>* m, acc_t<T>* v, std::int64_t n,
                         float lr, float beta1, float beta2, float eps, float weight_decay, int step, void*) {
  using A = acc_t<T>;
  A c1 = A(1) - std::pow(A(beta1), A(step)), c2 = A(1) - std::pow(A(beta2), A(step));
  for (std::int64_t i = 0; i < n; ++i) {
    A g = load(grads[i]), p = master[i];
    m[i] = A(beta1) * m[i] + (A(1) - A(beta1)) * g;
    v[i] = A(beta2) * v[i] + (A(1) - A(beta2)) * g * g;
    master[i] = p - A(lr) * ((m[i] / c1) / (std::sqrt(v[i] / c2) + A(eps)) + A(weight_decay) * p);
    params[i] = store<T>(master[i]);
  }
}

template <class T>
void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay, void*) {
  using A = acc_t<T>;
  for (std::int64_t i = 0; i < n; ++i) {
    A p = load(params[i]);
    params[i] = store<T>(p - A(lr) * (load(grads[i]) + A(weight_decay) * p));
  }
}

}  // namespace parbench::ref

namespace parbench::ops {

using namespace detail;  // Op, OpScratch, Acc and the other helpers of kernels/dispatch.h

void adamw_update(Tensor& params, const Tensor& grads, Tensor& m, Tensor& v, const AdamWConfig& cfg, int step,
                  const Stream& s) {
  Op op{"adamw_update", s};
  DType d = op.storage(params, "params");
  std::int64_t n = params.numel();
  op.like({{grads, "grads"}}, d, n);
  op.like({{m, "m"}, {v, "v"}}, acc_dtype(d), n);
  if (step < 1) op.fail("step " + std::to_string(step) + " must count from 1");
  PB_DISPATCH(op, d, adamw_update, params.ptr<T>(), grads.ptr<T>(), m.ptr<Acc<T>>(), v.ptr<Acc<T>>(), n, cfg.lr,
              cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, step);
}

void adamw_update_master(Tensor& params, const Tensor& grads, Tensor& master, Tensor& m, Tensor& v,
                         const AdamWConfig& cfg, int step, const Stream& s) {
  Op op{"adamw_update_master", s};
  DType d = op.storage(params, "params");
  std::int64_t n = params.numel();
  op.like({{grads, "grads"}}, d, n);
  op.like({{master, "master"}, {m, "m"}, {v, "v"}}, acc_dtype(d), n);
  if (step < 1) op.fail("step " + std::to_string(step) + " must count from 1");
  PB_DISPATCH(op, d, adamw_update_master, params.ptr<T>(), grads.ptr<T>(), master.ptr<Acc<T>>(), m.ptr<Acc<T>>(),
              v.ptr<Acc<T>>(), n, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, step);
}

void sgd_update(Tensor& params, const Tensor& grads, float lr, float weight_decay, const Stream& s) {
  Op op{"sgd_update", s};
  DType d = op.storage(params, "params");
  op.like({{grads, "grads"}}, d, params.numel());
  PB_DISPATCH(op, d, sgd_update, params.ptr<T>(), grads.ptr<T>(), params.numel(), lr, weight_decay);
}

}  // namespace parbench::ops

// The workloads of the op table (kernels/op_table.h), run by the kernel tests and bench_kernels.
namespace parbench::optable {

// Over one transformer block's parameters (12 C^2).
Work adamw_update_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = 12LL * s.C * s.C;
  Arg p = c.in(c.dtype(), {n}), g = c.in(c.dtype(), {n}), m = c.in(c.acc(), {n}, -0.1, 0.1),
      v = c.in(c.acc(), {n}, 0, 0.1);
  ops::AdamWConfig cfg{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
  auto call = [=](int i, const Stream& st) mutable { ops::adamw_update(p[i], g[i], m[i], v[i], cfg, 1, st); };
  return Work{call, {p, m, v}, 12.0 * n, n * (3 * elem_bytes(c.dtype()) + 16)};
}

// Over one block's parameters and 3 more, so that the 4-element loop leaves a tail.
Work adamw_update_master_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = 12LL * s.C * s.C + 3;
  Arg p = c.out(c.dtype(), {n}), g = c.in(c.dtype(), {n}), master = c.in(c.acc(), {n}),
      m = c.in(c.acc(), {n}, -0.1, 0.1), v = c.in(c.acc(), {n}, 0, 0.1);
  ops::AdamWConfig cfg{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
  auto call = [=](int i, const Stream& st) mutable {
    ops::adamw_update_master(p[i], g[i], master[i], m[i], v[i], cfg, 3, st);
  };
  return Work{call, {p, master, m, v}, 12.0 * n, n * (2 * elem_bytes(c.dtype()) + 24)};
}

Work sgd_update_workload(OpCase& c, const OpShape& s) {
  std::int64_t n = 12LL * s.C * s.C;
  Arg p = c.in(c.dtype(), {n}), g = c.in(c.dtype(), {n});
  auto call = [=](int i, const Stream& st) mutable { ops::sgd_update(p[i], g[i], 1e-2f, 0.01f, st); };
  return Work{call, {p}, 4.0 * n, 3.0 * n * elem_bytes(c.dtype())};
}

}  // namespace parbench::optable
