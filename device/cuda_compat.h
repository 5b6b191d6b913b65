// Kernel source contract: one .cu file builds with nvcc (namespace parbench::cuda_kernels) and with
// g++ against the simt emulator (PB_SIMT, namespace parbench::simt_kernels). See the README's simt section.
#pragma once

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "base/error.h"

#define PB_KERNEL_NS cuda_kernels
#define PB_LAUNCH(kernel, grid, block, smem, stream) kernel<<<(grid), (block), (smem), (cudaStream_t)(stream)>>>
// One byte array for every kernel (extern __shared__ arrays of different types under one name
// conflict), seen as a T* -- the same form as under simt. Use inside a kernel body.
#define PB_DYNAMIC_SHARED(T, name)                                     \
  extern __shared__ __align__(16) unsigned char pb_dynamic_shared_[]; \
  T* const name = reinterpret_cast<T*>(pb_dynamic_shared_)
#define PB_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#elif defined(PB_SIMT) && defined(PB_EMU_CUDA)
// The emulated GPU build's cuda device: the simt machinery runs the kernels, but a launch is queued on its
// stream and runs when the stream's worker reaches it (device/emu/launch.h).
#include "base/error.h"
#include "device/emu/launch.h"
#include "device/simt/simt.h"

namespace parbench::cuda_kernels {
using namespace ::parbench::simt;
}

#define PB_KERNEL_NS cuda_kernels
#define PB_LAUNCH(kernel, grid, block, smem, stream)                                                          \
  ::parbench::gpu_emu::make_stream_launch(kernel, #kernel, ::parbench::simt::dim3(grid),                      \
                                          ::parbench::simt::dim3(block), (smem), (stream), __FILE__, __LINE__)
#define PB_DYNAMIC_SHARED(T, name) T* const name = static_cast<T*>(::parbench::simt::detail::dynamic_shared_memory)
#define PB_CHECK_LAUNCH() ::parbench::gpu_emu::check_launch(__FILE__, __LINE__)

#elif defined(PB_SIMT)
#include "base/error.h"
#include "device/simt/simt.h"

// Every CUDA name is visible in the kernel namespace and none is declared globally: other
// translation units of the same program include the real CUDA headers.
namespace parbench::simt_kernels {
using namespace ::parbench::simt;
}

#define PB_KERNEL_NS simt_kernels
// A synchronous emulated launch; throws parbench::Error on launch-limit violations.
#define PB_LAUNCH(kernel, grid, block, smem, stream)                                                        \
  ::parbench::simt::detail::make_launch(kernel, #kernel, ::parbench::simt::dim3(grid),                     \
                                        ::parbench::simt::dim3(block), (smem), (stream), __FILE__, __LINE__)
// Inside a kernel body only: a T* to this block's buffer (128-byte aligned, filled with 0xff bytes
// at block start so reads of unwritten elements show).
#define PB_DYNAMIC_SHARED(T, name) T* const name = static_cast<T*>(::parbench::simt::detail::dynamic_shared_memory)
#define PB_CHECK_LAUNCH() \
  do {                    \
  } while (0)

#else
#error "device/cuda_compat.h: compile with nvcc, or with g++ and PB_SIMT=1 (parbench_add_kernels does both)"
#endif
