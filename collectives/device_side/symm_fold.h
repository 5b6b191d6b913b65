// The butterflies' ranks for rd-dev and rhd-dev (included by their .cu files), as recursive.h's for the host-driven
// rd and rhd: a group that is not a power of two folds onto p2 = 2^floor(lg n) virtual ranks. Ranks r < 2 * extra
// pair up: odd r hands its data to r - 1 first and takes the result from it last; the virtual rank of r is r / 2
// there and r - extra above. Virtual rank v owns real blocks [lo(v), lo(v + 1)).
#pragma once
#include "collectives/device_side/symm_device.h"

namespace parbench::PB_KERNEL_NS {

struct SymmFold {
  int p2 = 1, steps = 0, extra = 0, v = 0;
  bool folded = false;     // odd rank below 2 * extra: hands its data in, takes the result
  int folded_partner = -1; // the rank that folds into this one, or -1
  unsigned partners = 0;   // the real ranks of every butterfly step (none when folded)

  __device__ SymmFold(int n, int r) {
    while (p2 * 2 <= n) p2 *= 2, ++steps;
    extra = n - p2;
    folded = r < 2 * extra && r % 2 == 1;
    v = r < 2 * extra ? r / 2 : r - extra;
    if (r < 2 * extra && !folded) folded_partner = r + 1;
    for (int k = 0; k < steps && !folded; ++k) partners |= 1u << real_of(v ^ (1 << k));
  }
  __device__ int real_of(int vr) const { return vr < extra ? 2 * vr : vr + extra; }
  __device__ int lo(int vr) const { return vr < extra ? 2 * vr : vr + extra; }  // lo(p2) == n
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
