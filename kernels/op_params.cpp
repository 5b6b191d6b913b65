// The named GPT-2-like shapes.
#include "kernels/op_params.h"

namespace parbench::optable {

const std::vector<GptShape>& gpt_shapes() {
  static const std::vector<GptShape> shapes{{"tiny", true, {2, 32, 64, 4, 256}},
                                            {"small", true, {1, 64, 128, 4, 512}},
                                            {"gpt2-124M", false, {8, 1024, 768, 12, 50257}},
                                            {"gpt2-1.5B", false, {4, 1024, 1600, 25, 50257}}};
  return shapes;
}

}  // namespace parbench::optable
