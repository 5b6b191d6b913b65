// Storage conversion between fp32 and bf16 (round to nearest even).
#include "kernels/kernel_common.h"
#include "kernels/launchers.h"

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

void convert(::parbench::bf16* out, const float* inp, std::int64_t n, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(to_bf16_kernel, grid_for(n, 256), 256, 0, stream)(dev(out), inp, n);
  PB_CHECK_LAUNCH();
}

void convert(float* out, const ::parbench::bf16* inp, std::int64_t n, void* stream) {
  if (n == 0) return;
  PB_LAUNCH(to_f32_kernel, grid_for(n, 256), 256, 0, stream)(out, dev(inp), n);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
