// Device-side helpers shared by the kernel sources (included by kernels/*.cu only): storage <-> float
// conversion, 16-byte packed loads, warp and block reductions, launch-size helpers.
#pragma once
#include <algorithm>
#include <cstdint>

#include "base/dtype.h"
#include "device/cuda_compat.h"
#ifndef PB_SIMT
#include <mma.h>
#endif

namespace parbench::PB_KERNEL_NS {

// Host launchers take parbench::bf16 (a plain 16-bit struct); kernels see __nv_bfloat16.
template <class T>
struct DeviceType {
  using type = T;
};
template <>
struct DeviceType<::parbench::bf16> {
  using type = __nv_bfloat16;
};
template <class T>
using DevT = typename DeviceType<T>::type;
template <class T>
DevT<T>* dev(T* p) {
  return reinterpret_cast<DevT<T>*>(p);
}
template <class T>
const DevT<T>* dev(const T* p) {
  return reinterpret_cast<const DevT<T>*>(p);
}

__device__ inline float to_f(float x) { return x; }
__device__ inline float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T>
__device__ inline T from_f(float x);
template <>
__device__ inline float from_f<float>(float x) {
  return x;
}
template <>
__device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}

// 16 bytes of T: one 128-bit load or store when the address is 16-byte aligned.
template <class T>
struct alignas(16) Pack16 {
  static constexpr int n = 16 / int(sizeof(T));
  T v[n];
};
template <class T>
__device__ inline Pack16<T> load16(const T* p) {
  return *reinterpret_cast<const Pack16<T>*>(p);
}

constexpr unsigned kFullMask = 0xffffffffu;

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Block-wide sum / max returned to every thread; blockDim.x must be a multiple of 32.
__device__ inline float block_sum(float v) {
  __shared__ float partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // the previous call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_sum(lane < nwarps ? partial[lane] : 0.f);
}
__device__ inline float block_max(float v) {
  __shared__ float partial[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_max(lane < nwarps ? partial[lane] : -INFINITY);
}

// Grid for a grid-stride loop over n elements: enough blocks to fill a GPU, never zero.
inline unsigned grid_for(std::int64_t n, int block) {
  return unsigned(std::clamp<std::int64_t>((n + block - 1) / block, 1, 65536));
}
inline unsigned ceil_div(std::int64_t a, std::int64_t b) { return unsigned((a + b - 1) / b); }

}  // namespace parbench::PB_KERNEL_NS
