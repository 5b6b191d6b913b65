// Peak memory of one pipeline stage's GPU by category: the ZeRO closed form for parameters, gradients and
// optimizer state (the same function --estimate-memory prints), activations per layer after Korthikanti et al.
// times the microbatches the schedule keeps in flight, and the loss's logits.
#pragma once
#include "core/allocator.h"
#include "predict/predict.h"

namespace parbench::predict {

// Bytes of activations one transformer block keeps for its backward, per microbatch, on one GPU.
double block_activation_bytes(const Layout& l);

// `in_flight`: microbatch-chunks the stage holds at its peak (the schedule simulation's count); `psi`: the stage's
// parameter elements (stage_parameter_counts).
MemSplit stage_memory(const Layout& l, int stage, int in_flight, double psi);

}  // namespace parbench::predict
