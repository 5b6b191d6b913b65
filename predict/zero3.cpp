// ZeRO-3's gathers and reduce-scatters as events on a communication stream beside the compute stream.
#include "predict/zero3.h"

#include <algorithm>

namespace parbench::predict {

namespace {

// Blocks in order; block i's compute needs its gather, and block i+1's gather is issued when block i's compute
// starts (block i-1's parameters are freed then). `scatter` > 0: each block's reduce-scatter is issued when its
// compute ends, on the same stream, after the gathers issued before it. Returns the end of the last event.
double play(int n, double compute, double gather, double scatter) {
  double comm = gather;  // the first block's gather: nothing to hide it
  double gathered = gather, compute_end = 0;
  for (int i = 0; i < n; ++i) {
    const double start = std::max(compute_end, gathered);
    if (i + 1 < n) gathered = comm = std::max(comm, start) + gather;  // prefetch the next block
    compute_end = start + compute;
    if (scatter > 0) comm = std::max(comm, compute_end) + scatter;
  }
  return std::max(compute_end, comm);
}

}  // namespace

Zero3Exposed zero3_exposed(const Zero3Pass& p) {
  const int n = std::max(1, int(p.blocks + 0.5));
  Zero3Exposed e;
  e.forward = play(n, p.forward, p.gather, 0) - n * p.forward;
  e.backward = play(n, p.backward, p.regather_backward ? p.gather : 0, p.scatter) - n * p.backward;
  return e;
}

}  // namespace parbench::predict
