// Storage conversion between fp32 and bf16 (round to nearest even).
#include <type_traits>

#include "device/kernel_common.h"

namespace parbench::PB_KERNEL_NS {

// One kernel per direction: a kernel template with two parameters would not pass through PB_LAUNCH.
__global__ void to_bf16_kernel(__nv_bfloat16* out, const float* inp, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(inp[i]);
}

__global__ void to_f32_kernel(float* out, const __nv_bfloat16* inp, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = __bfloat162float(inp[i]);
}

// The launcher is a template on both types, like the reference, so that one signature serves both.
template <class To, class From>
void convert(To* out, const From* inp, std::int64_t n, void* stream) {
  if (n == 0) return;
  if constexpr (std::is_same_v<To, ::parbench::bf16>)
    PB_LAUNCH(to_bf16_kernel, grid_for(n, 256), 256, 0, stream)(dev(out), inp, n);
  else
    PB_LAUNCH(to_f32_kernel, grid_for(n, 256), 256, 0, stream)(out, dev(inp), n);
  PB_CHECK_LAUNCH();
}

template void convert<::parbench::bf16, float>(::parbench::bf16*, const float*, std::int64_t, void*);
template void convert<float, ::parbench::bf16>(float*, const ::parbench::bf16*, std::int64_t, void*);

}  // namespace parbench::PB_KERNEL_NS
