// The device-side collectives' kernels over symmetric memory: the flag phases each operation uses, and their
// launchers; each collective is one kernel on the caller's stream.
#pragma once
#include "collectives/communicator/symm_peers.h"
#include "collectives/table/partition.h"

namespace parbench {

// Flag phases per operation of each kernel (the host advances the base by this much).
constexpr unsigned kOneshotPhases = 2;
constexpr unsigned kTwoshotPhases = 3;
inline unsigned ring_phases(int ranks) { return 2 * unsigned(ranks); }  // at most: input, n - 1 + n - 2 steps, done
constexpr unsigned kNaivePhases = 2;  // inputs ready, done reading
constexpr unsigned kTreePhases = 3;   // up the tree, down the tree, done reading
// The butterflies' steps (table/partition.h): lg of the largest power of two not above `ranks`.
inline unsigned symm_butterfly_steps(int ranks) { return unsigned(butterfly_steps(ranks)); }
// Fold in, one per step, result to the folded rank, done reading; rhd has a halving and a doubling step per level.
inline unsigned rd_phases(int ranks) { return symm_butterfly_steps(ranks) + 3; }
inline unsigned rhd_phases(int ranks) { return 2 * symm_butterfly_steps(ranks) + 3; }

}  // namespace parbench

#ifdef PARBENCH_HAVE_CUDA
namespace parbench::cuda_kernels {
// dtype and op: parbench::DType and parbench::ReduceOp as integers. `recv` may be `send` (in place).
void symm_oneshot_allreduce(const SymmPeers& p, const void* send, void* recv, unsigned long long count, int dtype,
                            int op, void* stream);
void symm_twoshot_allreduce(const SymmPeers& p, const void* send, void* recv, unsigned long long count, int dtype,
                            int op, void* stream);
// `coll`: parbench::Collective allreduce, reduce_scatter or allgather; `count` per rank, as CollArgs::count.
void symm_ring(const SymmPeers& p, int coll, const void* send, void* recv, unsigned long long count, int dtype,
               int op, void* stream);
// `root`: the rooted collectives' root. naive: every parbench::Collective; tree: broadcast, reduce, allreduce.
void symm_naive(const SymmPeers& p, int coll, int root, const void* send, void* recv, unsigned long long count,
                int dtype, int op, void* stream);
void symm_tree(const SymmPeers& p, int coll, int root, const void* send, void* recv, unsigned long long count,
               int dtype, int op, void* stream);
// rd: allreduce, allgather; rhd: allreduce, reduce_scatter (its allgather is rd's).
void symm_rd(const SymmPeers& p, int coll, const void* send, void* recv, unsigned long long count, int dtype,
             int op, void* stream);
void symm_rhd(const SymmPeers& p, int coll, const void* send, void* recv, unsigned long long count, int dtype,
              int op, void* stream);
}  // namespace parbench::cuda_kernels
#endif
