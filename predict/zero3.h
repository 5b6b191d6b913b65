// ZeRO-3 inside one pass of a chunk's blocks, played on two streams: the communication stream gathers each block's
// parameters one block ahead of the compute stream (at most two blocks gathered at once, as FSDP prefetches), and
// in the backward reduce-scatters each block's gradients once the block is done. FSDP's ZeRO-2 (SHARD_GRAD_OP) the
// same without the backward's gathers.
#pragma once

namespace parbench::predict {

struct Zero3Pass {
  double blocks = 1;    // blocks in the chunk (a whole number)
  double forward = 0;   // one block's forward compute (its tensor-parallel communication included)
  double backward = 0;  // one block's backward compute (recomputation included)
  double gather = 0;    // one block's parameter all-gather
  double scatter = 0;   // one block's gradient reduce-scatter
  bool regather_backward = true;  // the backward gathers each block again (FSDP's SHARD_GRAD_OP kept them)
};

// Seconds of the forward and of the backward (up to the last reduce-scatter's end) beyond their compute: the
// gathers and reduce-scatters the compute does not hide.
struct Zero3Exposed {
  double forward = 0, backward = 0;
};
Zero3Exposed zero3_exposed(const Zero3Pass& p);

}  // namespace parbench::predict
