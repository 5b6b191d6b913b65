// What the scheme tests share: a tiny model configuration, training a scheme for a few steps on cpu threads with
// what each rank ends with, and the relative parameter difference.
#pragma once
#include <cmath>
#include <vector>

#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "parallel/train.h"

namespace parbench::test {

inline TrainConfig base_config(ModelKind kind = ModelKind::gpt) {
  TrainConfig c;
  c.model.kind = kind;
  c.model.layers = 2;
  c.model.hidden = 16;
  c.model.heads = 2;
  c.model.seq = 6;
  c.model.vocab = 24;
  c.model.ffn = 40;
  if (kind == ModelKind::llama) c.model.hidden = 32, c.model.heads = 8, c.model.kv_heads = 2;  // four per kv head
  c.optimizer = OptimizerKind::sgd;
  c.adamw.lr = 0.1f;
  c.impl = &find_algorithm("ring");
  c.seed = 4321;
  return c;
}

struct RankOutcome {
  std::vector<float> params;
  double loss = 0;
  MemSplit current{};
  std::uint64_t comm = 0;
  MemSplit estimate{};
};

inline std::vector<RankOutcome> train(const TrainConfig& c, int ranks, int steps = 3, Device dev = Device{}) {
  std::vector<RankOutcome> out(ranks);
  run_ranks({ranks, dev, 60}, [&](Communicator& comm) {
    TrackedAllocator alloc(comm.device());
    Stream stream(comm.device());
    auto scheme = make_scheme(c, {comm, alloc, stream});
    RankOutcome& o = out[comm.rank()];
    for (int s = 0; s < steps; ++s) o.loss = scheme->step(s);
    for (int k = 0; k < kMemCategories; ++k) o.current[k] = alloc.current(MemCategory(k));
    o.comm = scheme->last_step_comm().bytes;
    o.estimate = scheme->estimated_state_bytes();
    o.params = scheme->full_params();
  });
  return out;
}

inline double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  return diff / scale;
}

}  // namespace parbench::test
