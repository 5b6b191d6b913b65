// The butterflies' ranks for rd-dev and rhd-dev (included by their .cu files): the fold of table/partition.h, the
// one the host-driven rd and rhd use.
#pragma once
#include "collectives/device_side/symm_device.h"
#include "collectives/table/partition.h"

namespace parbench::PB_KERNEL_NS {

// The fold (table/partition.h), with what a kernel asks of it on every step: the rank that folds into this one and
// the real ranks of its butterfly partners.
struct SymmFold : ButterflyFold {
  int folded_partner = -1;  // the rank that folds into this one, or -1
  unsigned partners = 0;    // the real ranks of every butterfly step (none when folded)

  __device__ SymmFold(int n, int r) : ButterflyFold(n, r) {
    if (r < 2 * extra && !folded) folded_partner = r + 1;
    for (int k = 0; k < steps && !folded; ++k) partners |= 1u << real_of(v ^ (1 << k));
  }
};

// Phases of a butterfly kernel with `steps` exchange steps (the host's phases() counts as many): the fold, the
// steps, the result to the folded rank, done reading.
constexpr unsigned kFoldPhase = 1;
__device__ inline unsigned fold_result_phase(unsigned steps) { return steps + 2; }
__device__ inline unsigned fold_done_phase(unsigned steps) { return steps + 3; }

// The first wait for a peer's data skips waiting under the planted race of the tests (SymmPeers::skip_ready_wait);
// later ones wait.
struct SymmFirstWait {
  bool skip;
  __device__ bool next() {
    const bool wait = !skip;
    skip = false;
    return wait;
  }
};

}  // namespace parbench::PB_KERNEL_NS
