// The data-parallel state of a set of model units (the whole model, or one pipeline stage's units) over a
// data-parallel group: replicated with an allreduce of the gradients (stage 0), or ZeRO's stages, each unit split
// in equal pieces over the group: 1 shards the optimizer state, 2 also the gradients (each unit reduce-scattered
// as soon as backward finishes it), 3 also the parameters (a unit all-gathered when the model asks for it and
// freed after use). Used by the zero1..3 schemes and by the model-parallel schemes' data-parallel dimension.
#pragma once
#include <map>
#include <optional>
#include <vector>

#include "models/model.h"
#include "parallel/comm_queue.h"
#include "parallel/optimizer.h"
#include "parallel/train.h"

namespace parbench {

// Rank r's piece of every unit: unit u is padded to a multiple of n * kParamAlign elements and split in n equal
// pieces; a rank's shard is its pieces of all units, concatenated.
struct ShardLayout {
  ShardLayout(const ParamLayout& layout, int ranks);
  struct Unit {
    std::int64_t full_offset;   // unit start in the full flat buffer
    std::int64_t numel;         // unit elements in the full buffer
    std::int64_t piece;         // elements per rank (padded numel / ranks)
    std::int64_t shard_offset;  // this unit's piece inside a rank's shard
  };
  std::vector<Unit> units;
  std::int64_t shard_numel = 0;  // elements of one rank's shard
  int ranks = 1;
};

class ZeroState {
 public:
  // `units`: the model units held here, ascending; `layout`: the model's layout; `initial`: the held units'
  // starting values (model dtype, on the device), packed in that order. The group must outlive this.
  // Computation goes on ctx's stream, the group's collectives on its communication stream (parallel/comm_queue.h).
  ZeroState(const TrainConfig& cfg, int stage, const ParamLayout& layout, const std::vector<int>& units,
            Communicator& group, const RankContext& ctx, CommCounter& counter, const Tensor& initial);
  ~ZeroState();

  // The model's view of the held units for one step; prefetch (stage 3): gather the next unit of the pass ahead
  // (only when the units are the whole model, whose pass order is known).
  UnitAccess& begin_step(bool prefetch);
  // After the step's last backward: reduce the gradients over the group and update (then all-gather for 1, 2).
  void finish_step(int step_index);
  // The held units' current parameters as floats, packed (collective over the group at stage 3).
  std::vector<float> packed_params();
  std::int64_t packed_numel() const { return packed_.total; }

 private:
  class Access;
  int index_of(int unit) const;
  Tensor unit_of(const Tensor& packed, int index) const;
  Tensor make(std::int64_t n, MemCategory c) const;
  void zero(Tensor& t) const;
  Tensor shard_of_full() const;
  void copy_shard_out(const Tensor& full, Tensor& shard) const;
  // Queue unit `index`'s reduce-scatter into its piece of shard_grads / all-gather into unit_params (a ticket).
  std::size_t reduce_scatter_unit(int index, const Tensor& unit_grads, Tensor& shard_grads, bool accumulate);
  std::size_t all_gather_unit(int index, const Tensor& shard, Tensor& unit_params);
  // params = optimizer step(params, grads): the replicas (stage 0) or this rank's shard.
  void update(Tensor& params, const Tensor& grads, int step_index);
  const Algorithm* impl_for(Collective c) const;

  const TrainConfig& cfg_;
  const int stage_;
  ParamLayout packed_;         // the held units, offsets into the packed buffers
  std::map<int, int> index_;   // model unit -> index in packed_
  Communicator& group_;
  TrackedAllocator& alloc_;
  const Stream& stream_;
  CommCounter& counter_;
  ShardLayout shards_;
  // Offload: the parameter and gradient copies exchanged with the GPU each step are page-locked (DMA); the
  // optimizer's state and temporaries, touched by the host alone, are plain host memory. Page-locked memory must
  // not be freed inside a step: cudaFreeHost waits for the device's and its peers' work, which may include a peer's
  // collective that waits for one this rank has yet to issue.
  TrackedAllocator pinned_alloc_;
  TrackedAllocator host_alloc_;
  Stream host_stream_;
  Tensor full_params_, full_grads_, shard_params_, shard_grads_, host_params_, host_grads_;
  std::optional<FlatOptimizer> opt_;
  CommQueue queue_;
  std::unique_ptr<Access> access_;
};

}  // namespace parbench
