// Reference storage conversion between fp32 and bf16.
#include "kernels/ref/ref.h"

namespace parbench::ref {

template <class To, class From>
void convert(To* out, const From* inp, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = store<To>(acc_t<To>(load(inp[i])));
}

template void convert<bf16, float>(bf16*, const float*, std::int64_t);
template void convert<float, bf16>(float*, const bf16*, std::int64_t);

}  // namespace parbench::ref
