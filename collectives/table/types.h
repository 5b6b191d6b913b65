// Collective kinds and reduction ops: names, parsing, buffer shapes and the busbw factors (docs/metrics.md);
// the collective functions read collectives/table/collective_table.h, which holds one row per collective.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"

namespace parbench {

enum class Collective {
  broadcast, reduce, allreduce, gather, allgather, scatter, reduce_scatter, alltoall, sendrecv, alltoallv, hypercube
};
enum class ReduceOp { sum, prod, max, min, avg };

std::string_view collective_name(Collective c);
std::string_view reduce_op_name(ReduceOp op);
const std::vector<Collective>& all_collectives();
const std::vector<ReduceOp>& all_reduce_ops();
// Accepts sum, prod, max, min, avg; throws UsageError naming the token and the accepted names.
ReduceOp parse_reduce_op(std::string_view s);

bool is_rooted(Collective c);      // broadcast, reduce, gather, scatter
bool is_reduction(Collective c);   // reduce, allreduce, reduce_scatter
bool counts_per_peer(Collective c);  // alltoall, alltoallv, hypercube: the count is what a rank sends each peer
// algbw = size column / time x algbw_factor and busbw = algbw x busbw_factor (nccl-tests). The busbw factor is the
// collective's wire fraction (collective_table.h, Wire), except for the hypercube, whose algbw counts only the
// (n-1)/n of the gathered bytes that travel and whose busbw is that algbw.
double algbw_factor(Collective c, int ranks);
double busbw_factor(Collective c, int ranks);
// Empty when `c` can run over `ranks` ranks; otherwise why not (the hypercube needs a power of two).
std::string ranks_refusal(Collective c, int ranks);

// Element counts of the send and receive buffers on `rank` for a call with per-rank `count` (NCCL's convention:
// allgather/gather send count and receive count*n, reduce-scatter/scatter the other way round, alltoall count
// per peer, alltoallv the totals of this rank's split: alltoallv_split.h). Non-roots of gather/scatter/reduce get
// 0 for the buffer they do not use.
struct BufferCounts {
  std::size_t send = 0;
  std::size_t recv = 0;
};
BufferCounts buffer_counts(Collective c, std::size_t count, int ranks, int rank, int root, DType t);
// The largest send and receive counts over the ranks (the root's, alltoallv's largest split totals): the size
// column's buffers.
BufferCounts largest_buffer_counts(Collective c, std::size_t count, int ranks, int root, DType t);
// The per-rank count whose largest buffer has at most `bytes` bytes (the nccl-tests size column), rounded as
// nccl-tests rounds it: the hypercube's to 4 elements, alltoallv's per-peer count to 16 bytes (0 for a matrix).
std::size_t count_for_bytes(Collective c, std::size_t bytes, DType t, int ranks);
// NCCL's in-place layout: when only one buffer holds n blocks (allgather/gather receive, reduce-scatter/scatter
// send), the other lies inside it at block `rank`; all others alias exactly.
enum class InPlace { aliased, send_inside_recv, recv_inside_send };
InPlace inplace_layout(Collective c);
// Offset (elements) of the inner buffer inside the outer one (0 when aliased).
std::size_t inplace_offset(Collective c, std::size_t count, int rank);

}  // namespace parbench
