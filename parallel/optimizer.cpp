// AdamW / SGD over a flat range, with fp32 master weights for bf16 models.
#include "parallel/optimizer.h"

#include "core/memory.h"
#include "kernels/ops.h"
#include "parallel/plan/plan.h"
#include "profiles/range.h"

namespace parbench {

std::int64_t FlatOptimizer::state_bytes_per_param(const TrainConfig& cfg) {
  return optimizer_state_bytes_per_param(cfg.optimizer, cfg.model.dtype);
}

FlatOptimizer::FlatOptimizer(const TrainConfig& cfg, TrackedAllocator& alloc, const Tensor& initial, const Stream& s)
    : cfg_(cfg), alloc_(alloc) {
  const std::int64_t n = initial.numel();
  if (cfg.optimizer == OptimizerKind::adamw) {
    m_ = Tensor(alloc, DType::f32, {n}, MemCategory::optimizer);
    v_ = Tensor(alloc, DType::f32, {n}, MemCategory::optimizer);
    device_memset(alloc.device(), m_.data(), 0, m_.bytes());
    device_memset(alloc.device(), v_.data(), 0, v_.bytes());
  }
  if (keeps_master_copy(initial.dtype())) {
    master_ = Tensor(alloc, DType::f32, {n}, MemCategory::optimizer);
    ops::convert(master_, initial, s);
  }
}

void FlatOptimizer::step(Tensor& params, const Tensor& grads, int step_index, const Stream& s) {
  PB_RANGE("optimizer", Category::optimizer, {.bytes = std::int64_t(params.bytes())});
  if (cfg_.optimizer == OptimizerKind::adamw && keeps_master_copy(params.dtype()) && grads.dtype() == DType::bf16)
    return ops::adamw_update_master(params, grads, master_, m_, v_, cfg_.adamw, step_index + 1, s);  // one launch
  Tensor& target = keeps_master_copy(params.dtype()) ? master_ : params;
  Tensor g = grads;
  Tensor g32;
  if (grads.dtype() == DType::bf16) {  // updates run in fp32 on the master copy
    g32 = Tensor(alloc_, DType::f32, {grads.numel()}, MemCategory::workspace);
    ops::convert(g32, grads, s);
    g = g32;
  }
  if (cfg_.optimizer == OptimizerKind::adamw)
    ops::adamw_update(target, g, m_, v_, cfg_.adamw, step_index + 1, s);
  else
    ops::sgd_update(target, g, cfg_.adamw.lr, cfg_.adamw.weight_decay, s);
  if (keeps_master_copy(params.dtype())) ops::convert(params, master_, s);
}

}  // namespace parbench
