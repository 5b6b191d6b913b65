// Alpha-beta cost of collectives on a system's network levels (Thakur, Rabenseifner and Gropp 2005), one function per
// algorithm, and the choice NCCL makes in effect: the least time among the algorithms that apply (on a system whose
// collectives are NCCL's, its ring and tree, with the per-step latency its cost model adds beyond two nodes under the
// protocol that model picks).
#pragma once
#include <string>
#include <vector>

#include "collectives/table/types.h"
#include "predict/system.h"

namespace parbench::predict {

// Where a group's ranks sit: `ranks` in all, `per_node` of them in each innermost (NVLink) domain.
struct GroupPlacement {
  int ranks = 1;
  int per_node = 1;
};

// A group of ranks placed with a given stride in Megatron's rank order (tensor-parallel ranks adjacent): the ranks
// r, r + stride, ... share a node as long as stride x (index) stays within the node.
GroupPlacement place_group(const SystemModel& sys, int ranks, int stride);

// One link's alpha-beta figures: seconds per message and seconds per byte, the latter at the level's efficiency for a
// collective of `bytes` (nccl-tests' size).
struct Link {
  double alpha = 0, beta = 0;
};
Link link_of(const NetLevel& level, double bytes);

struct CollCost {
  std::string algorithm;  // ring, tree, rd, rhd, hierarchical, direct
  double seconds = 0;
};

// Every algorithm that applies to (c, group) on the system with its time; `bytes` is the per-rank buffer (allgather: the full
// output; reduce-scatter: the full input; sendrecv: the message). Modelled: allreduce, allgather, reduce-scatter
// and sendrecv; Error for the others.
std::vector<CollCost> collective_costs(const SystemModel& sys, Collective c, double bytes, GroupPlacement g);
// The least of them (a group of one rank costs nothing).
CollCost collective_cost(const SystemModel& sys, Collective c, double bytes, GroupPlacement g);

}  // namespace parbench::predict
