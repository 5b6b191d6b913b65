// What kernels take that needs no kernels: the sizes a workload runs at (llm.c's notation), the named GPT-2-like
// shapes bench_kernels and the tests pick from, and AdamW's hyperparameters; apart from the op table and the ops,
// so that command-line checks and training configurations link without the kernels.
#pragma once
#include <string>
#include <vector>

namespace parbench::optable {

// GPT-like sizes in llm.c notation: batch, sequence, channels, heads, vocabulary.
struct OpShape {
  int B, T, C, NH, V;
};

// A named shape. By default host devices run the small ones (so a run takes seconds) and cuda the GPT-2 ones.
struct GptShape {
  std::string name;
  bool host_default;
  OpShape dims;
};
const std::vector<GptShape>& gpt_shapes();

}  // namespace parbench::optable

namespace parbench::ops {

struct AdamWConfig {
  float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};

}  // namespace parbench::ops
