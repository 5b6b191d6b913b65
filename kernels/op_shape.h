// The sizes a kernel workload runs at, in llm.c's notation, and the named GPT-2-like shapes that bench_kernels and
// the tests pick from: apart from the op table, so that command-line checks link without the kernels.
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
