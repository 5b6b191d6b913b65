// The accumulation steps a configuration implies.
#include "parallel/train_config.h"

#include <string>

#include "base/error.h"

namespace parbench {

int accumulation_steps(const TrainConfig& c, int dp) {
  if (c.global_batch < 1) throw UsageError("--global-batch " + std::to_string(c.global_batch) + " must be >= 1");
  const int micro = c.micro_batch > 0 ? c.micro_batch : c.global_batch / dp;
  if (micro < 1 || c.global_batch % (dp * micro) != 0)
    throw UsageError("global batch " + std::to_string(c.global_batch) + " is not divisible by " + std::to_string(dp) +
                     " data-parallel ranks x micro-batch " + std::to_string(c.micro_batch > 0 ? c.micro_batch : micro) +
                     "; choose --global-batch = ranks x micro-batch x accumulation steps");
  return c.global_batch / (dp * micro);
}

}  // namespace parbench
