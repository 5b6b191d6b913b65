// Tensor-core building blocks for kernel sources: mma.sync m16n8k16 (bf16/f16 in, fp32 accumulate), ldmatrix m8n8
// x1/x2/x4 (.trans), cp.async 16-byte copies with commit/wait groups, and XOR swizzles of shared-memory tiles.
// nvcc gets inline PTX; simt gets device/simt/simt_mma.h, the same operations with the PTX ISA's semantics.
#pragma once
#include <cstdint>

#include "device/cuda_compat.h"
#include "device/swizzle.h"
#if defined(PB_SIMT)
#include "device/simt/simt_mma.h"
#endif

namespace parbench::PB_KERNEL_NS {

#if !defined(PB_SIMT)
// D = A B + C for one warp, m16n8k16, A row-major and B column-major bf16 (two per 32-bit register in the ISA's
// fragment layout), fp32 C and D.
__device__ inline void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                         const float (&c)[4]) {
#if defined(__CUDA_ARCH__)
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#endif
}
__device__ inline void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                        const float (&c)[4]) {
#if defined(__CUDA_ARCH__)
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
#endif
}

// ldmatrix.sync.aligned.m8n8.xN(.trans).shared.b16: lane 8j + r gives row r of matrix j (16-byte aligned shared
// memory); register j of each lane receives its two elements of matrix j.
template <int N, bool Trans = false>
__device__ inline void ldmatrix_m8n8(std::uint32_t (&r)[N], const void* row) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
#if defined(__CUDA_ARCH__)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (N == 1 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s) : "memory");
  else if constexpr (N == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s) : "memory");
  else if constexpr (N == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s)
                 : "memory");
  else if constexpr (N == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1])
                 : "r"(s) : "memory");
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s) : "memory");
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s) : "memory");
#endif
}

// A thread's cp.async copies: copy16 issues cp.async.cg.shared.global of 16 bytes (src_bytes of them read,
// the rest zero-filled), commit closes a group, wait<N> returns when all but the newest N groups landed.
struct AsyncCopies {
  __device__ void copy16(void* dst, const void* src, int src_bytes) {
#if defined(__CUDA_ARCH__)
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const std::uint64_t g = __cvta_generic_to_global(src);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(src_bytes) : "memory");
#endif
  }
  __device__ void commit() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
  }
  template <int N>
  __device__ void wait() {
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
  }
};
#endif

}  // namespace parbench::PB_KERNEL_NS
