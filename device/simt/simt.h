// The simt emulator: CUDA C++ kernels compiled by g++ and run on the CPU, one fiber per CUDA thread.
// Kernel sources include device/cuda_compat.h, which includes this under PB_SIMT.
#pragma once
#include "device/simt/simt_device.h"
#include "device/simt/simt_runtime.h"
#include "device/simt/simt_types.h"
#include "device/simt/simt_wmma.h"

// CUDA's declaration specifiers. This build never includes the CUDA toolkit headers, whose host
// versions would define __shared__ as nothing and silently make shared arrays per-thread:
// here __shared__ is thread_local, i.e. per block, since a block never leaves its OS thread.
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
#ifndef __shared__
#define __shared__ thread_local
#endif
#ifndef __constant__
#define __constant__
#endif
#ifndef __grid_constant__
#define __grid_constant__
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif
