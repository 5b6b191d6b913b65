// Megatron tensor (and sequence) parallelism inside the models: the tp context a model is created with, the map
// between a tp rank's parameters and the full model's, and the counted collectives the models run over the tp group.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator/communicator.h"
#include "core/allocator.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "models/config.h"

namespace parbench {

// The tp group of a model (its size must equal ModelConfig::tp; its collectives run the group's implementation,
// Communicator::set_implementation) and the traffic the model moved over it.
struct TensorParallel {
  Communicator* comm = nullptr;
  // Nominal bytes moved per rank, counted like parallel/train.h's CommCounter: wire_bytes (collective_table.h) of
  // each call with S the full tensor's bytes.
  std::uint64_t bytes = 0;
};

// One map used both ways between a tp rank's unit and the same unit of the full (tp = 1) layout.
struct TpIndex {
  std::vector<std::int64_t> full;  // per local element of the unit: index into the full unit, -1 for padding
  std::vector<bool> replicated;    // per local element: the parameter is a full copy on every tp rank
};
// Rank `tp_rank` of c.tp: column-parallel weights (qkvw, qkvb, fcw, fcb, wte, lmw) hold rows of the full ones
// (qkv: the q, k and v rows of heads [r NH/tp, (r+1) NH/tp)), row-parallel weights (projw, fcprojw) columns.
TpIndex tp_index(const ModelConfig& c, int tp_rank, int unit);

// Bytes per rank (counted as TensorParallel::bytes) of one microbatch of `samples` through units
// [first_unit, last_unit), forward and backward (either all at once or split into input and weight parts).
std::uint64_t tp_bytes_per_microbatch(const ModelConfig& c, std::int64_t samples, int first_unit, int last_unit);

// Collectives on model tensors over tp.comm, each counted in tp.bytes. The stream is synchronised first (the
// collectives run outside it and return when done). Nothing is sent when the group has one rank.
namespace tp_comm {
void allreduce(TensorParallel& tp, Tensor& t, ReduceOp op, const Stream& s);
// (B, T, ...) rank shards (B, T/n, ...) gathered along the sequence: full = the shards in rank order per sample.
void all_gather_seq(TensorParallel& tp, Tensor& full, const Tensor& local, TrackedAllocator& alloc, const Stream& s);
// The sum over the ranks of full (B, T, ...), each rank keeping its sequence shard (B, T/n, ...).
void reduce_scatter_seq(TensorParallel& tp, Tensor& local, const Tensor& full, TrackedAllocator& alloc,
                        const Stream& s);
}  // namespace tp_comm

}  // namespace parbench
