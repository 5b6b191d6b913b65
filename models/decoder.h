// What the decoder models (gpt.cpp, llama.cpp) share: units 0 the embedding, 1..L the blocks, L+1 the head; the
// Megatron f/g boundaries between a sequence shard and the full sequence; the vocabulary-parallel embedding and
// cross-entropy; norm weight gradients summed over the tp ranks under sequence parallelism.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "models/model.h"

namespace parbench {

class Decoder : public Model {
 protected:
  using Model::Model;

  int head_unit() const { return config_.layers + 1; }
  // The first vocabulary row this tp rank holds of the embedding and the head.
  std::int64_t vocab_begin() const { return std::int64_t(tp_rank()) * (config_.vocab / config_.tp); }
  // Row-parallel biases go in once, on tp rank 0, before the sum over the ranks.
  const Tensor* row_bias(const Tensor& b) const { return tp_rank() == 0 ? &b : nullptr; }

  // Megatron's f and g at a sequence shard (B,T/tp,C) <-> full sequence (B,T,C) boundary. Without sp the shard is
  // the whole sequence: gathering is the identity and reducing an allreduce in place.
  Tensor gather_seq(const Tensor& local, std::int64_t B, bool keep_result, const Stream& s) const;
  // Sums the tp ranks' partial (B,T,C) and returns this rank's part of it (in place without sp).
  Tensor reduce_seq(Tensor& full, std::int64_t B, const Stream& s) const;

  // The embedding's output x1 (B,Ts,C): each rank embeds the tokens of its vocabulary rows (zero for the others)
  // plus, on rank 0, the positions (wpe may be null); the sum over ranks is the table.
  Tensor embed(const Batch& batch, const Tensor& wte, const Tensor* wpe, const Stream& s) const;
  // The microbatch's losses (B,T) and, in place of the logits (B,T,V/tp), their gradient scaled by dloss: the
  // fused softmax cross-entropy, vocabulary-parallel under tp (the row maximum, then the sums of exponentials and
  // the target logits, each combined over the ranks).
  void loss_and_dlogits(Tensor& losses, Tensor& dlogits, const Batch& batch, float dloss, const Stream& s) const;

  // Runs a norm backward that adds into the replicated per-channel weights `dweights` (each (C)). Under sp each
  // rank sees only its tokens, so the backward writes partial gradients that are summed over the tp ranks before
  // being added, so that the replicated copies stay equal.
  void norm_backward(std::initializer_list<Tensor*> dweights,
                     const std::function<void(std::vector<Tensor>& dw)>& backward, const Stream& s) const;
};

}  // namespace parbench
