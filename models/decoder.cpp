// The decoder models' shared tensor-parallel pieces (decoder.h).
#include "models/decoder.h"

#include "kernels/ops.h"

namespace parbench {

Tensor Decoder::gather_seq(const Tensor& local, std::int64_t B, bool keep_result, const Stream& s) const {
  if (!sp_active()) return local;
  Tensor full = keep_result ? act(local.dtype(), {B, config_.seq, config_.hidden})
                            : work(local.dtype(), {B, config_.seq, config_.hidden});
  tp_comm::all_gather_seq(*tp_, full, local, alloc_, s);
  return full;
}

Tensor Decoder::reduce_seq(Tensor& full, std::int64_t B, const Stream& s) const {
  if (!tp_active()) return full;
  if (!sp_active()) {
    tp_comm::allreduce(*tp_, full, ReduceOp::sum, s);
    return full;
  }
  Tensor local = work(full.dtype(), {B, config_.local_seq(), config_.hidden});
  tp_comm::reduce_scatter_seq(*tp_, local, full, alloc_, s);
  return local;
}

Tensor Decoder::embed(const Batch& batch, const Tensor& wte, const Tensor* wpe, const Stream& s) const {
  const std::int64_t B = batch.samples;
  Tensor partial = sp_active() ? work(config_.dtype, {B, config_.seq, config_.hidden})
                               : act(config_.dtype, {B, config_.seq, config_.hidden});
  ops::encoder_forward_shard(partial, batch.inputs, wte, wpe ? row_bias(*wpe) : nullptr, vocab_begin(), s);
  Tensor x1 = reduce_seq(partial, B, s);
  return sp_active() ? keep(x1, s) : x1;
}

void Decoder::loss_and_dlogits(Tensor& losses, Tensor& dlogits, const Batch& batch, float dloss,
                               const Stream& s) const {
  if (!tp_active()) {
    ops::crossentropy_forward_backward(losses, &dlogits, dlogits, batch.targets, dloss, s);
    return;
  }
  const std::int64_t B = batch.samples, T = config_.seq;
  const DType st = config_.stat_dtype();
  Tensor row_max = work(st, {B, T}), sums = work(st, {2, B, T});
  Tensor sumexp = sums.slice(0, {B, T}), target_logit = sums.slice(B * T, {B, T});
  ops::crossentropy_shard_max(row_max, dlogits, s);
  tp_comm::allreduce(*tp_, row_max, ReduceOp::max, s);
  ops::crossentropy_shard_sums(sumexp, target_logit, dlogits, batch.targets, row_max, vocab_begin(), s);
  tp_comm::allreduce(*tp_, sums, ReduceOp::sum, s);
  ops::crossentropy_shard_finish(losses, &dlogits, dlogits, batch.targets, row_max, sumexp, target_logit,
                                 vocab_begin(), dloss, s);
}

void Decoder::norm_backward(std::initializer_list<Tensor*> dweights,
                            const std::function<void(std::vector<Tensor>& dw)>& backward, const Stream& s) const {
  std::vector<Tensor> dw;
  if (!sp_active()) {
    for (Tensor* g : dweights) dw.push_back(*g);
    backward(dw);
    return;
  }
  const std::int64_t C = config_.hidden, k = std::int64_t(dweights.size());
  Tensor partial = work(config_.dtype, {k, C});
  zero(partial, s);
  for (std::int64_t i = 0; i < k; ++i) dw.push_back(partial.slice(i * C, {C}));
  backward(dw);
  tp_comm::allreduce(*tp_, partial, ReduceOp::sum, s);
  std::int64_t i = 0;
  for (Tensor* g : dweights) ops::residual_forward(*g, *g, dw[std::size_t(i++)], s);
}

}  // namespace parbench
