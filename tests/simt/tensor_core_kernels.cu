// Test kernels of the tensor-core building blocks (device/mma.h): one warp each, fragments built element by
// element from the ISA's layout so that the simt twins and the GPU are checked against the definition.
#include "device/mma.h"
#include "tests/simt/tensor_core_kernels.h"

namespace parbench::PB_KERNEL_NS {

__device__ inline std::uint32_t pack(std::uint16_t lo, std::uint16_t hi) { return lo | std::uint32_t(hi) << 16; }

// ISA layout of m16n8k16 (g = lane / 4, t = lane % 4): A register i holds row g + 8 (i % 2), columns
// 2t + 8 (i / 2) and +1; B register i holds rows 2t + 8i and +1 of column g; C/D element i is row g + 8 (i / 2),
// column 2t + i % 2.
__global__ void mma_once_kernel(float* lane_d, float* d, const std::uint16_t* a, const std::uint16_t* b,
                                const float* c, bool bf16, bool swap_a_k_halves) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  std::uint32_t ra[4], rb[2];
  float rc[4], rd[4];
  for (int i = 0; i < 4; ++i) {
    int row = g + 8 * (i % 2), k = 2 * t + 8 * (i / 2);
    if (swap_a_k_halves) k ^= 8;
    ra[i] = pack(a[row * 16 + k], a[row * 16 + k + 1]);
  }
  for (int i = 0; i < 2; ++i) rb[i] = pack(b[(2 * t + 8 * i) * 8 + g], b[(2 * t + 8 * i + 1) * 8 + g]);
  for (int i = 0; i < 4; ++i) rc[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
  if (bf16)
    mma_m16n8k16_bf16(rd, ra, rb, rc);
  else
    mma_m16n8k16_f16(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) {
    lane_d[4 * lane + i] = rd[i];
    d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = rd[i];
  }
}
void mma_once(float* lane_d, float* d, const std::uint16_t* a, const std::uint16_t* b, const float* c, bool bf16,
              bool swap_a_k_halves, void* stream) {
  PB_LAUNCH(mma_once_kernel, dim3(1), dim3(32), 0, stream)(lane_d, d, a, b, c, bf16, swap_a_k_halves);
  PB_CHECK_LAUNCH();
}

template <int N, bool Trans>
__device__ void ldmatrix_store(std::uint32_t* out, const void* row) {
  std::uint32_t r[N];
  ldmatrix_m8n8<N, Trans>(r, row);
  for (int j = 0; j < N; ++j) out[N * threadIdx.x + j] = r[j];
}
__global__ void ldmatrix_once_kernel(std::uint32_t* out, const std::uint16_t* tile, const int* row_of_lane, int n,
                                     bool trans) {
  __shared__ __align__(16) std::uint16_t s[32 * 8];
  for (int e = 0; e < 8; ++e) s[threadIdx.x * 8 + e] = tile[threadIdx.x * 8 + e];
  __syncwarp();
  const void* row = s + row_of_lane[threadIdx.x] * 8;
  if (n == 1) trans ? ldmatrix_store<1, true>(out, row) : ldmatrix_store<1, false>(out, row);
  if (n == 2) trans ? ldmatrix_store<2, true>(out, row) : ldmatrix_store<2, false>(out, row);
  if (n == 4) trans ? ldmatrix_store<4, true>(out, row) : ldmatrix_store<4, false>(out, row);
}
void ldmatrix_once(std::uint32_t* out, const std::uint16_t* tile, const int* row_of_lane, int n, bool trans,
                   void* stream) {
  PB_LAUNCH(ldmatrix_once_kernel, dim3(1), dim3(32), 0, stream)(out, tile, row_of_lane, n, trans);
  PB_CHECK_LAUNCH();
}

__device__ inline void copy_words(std::uint32_t* dst, const std::uint32_t* src) {
  for (int w = 0; w < 4; ++w) dst[w] = src[w];
}
__global__ void cp_async_groups_kernel(std::uint32_t* seen, const std::uint32_t* src, int src_bytes) {
  __shared__ __align__(16) std::uint32_t s[32 * 8];
  const int t = threadIdx.x;
  std::uint32_t* chunk0 = s + t * 8;
  std::uint32_t* chunk1 = s + t * 8 + 4;
  std::uint32_t* mine = seen + t * 16;
  AsyncCopies copies;
  copies.copy16(chunk0, src + t * 8, 16);
  copies.commit();
  copies.copy16(chunk1, src + t * 8 + 4, src_bytes);
  copies.commit();
  copy_words(mine, chunk0);  // before any wait: undefined on a GPU, the poison under simt
  copies.wait<1>();
  copy_words(mine + 4, chunk1);
  copy_words(mine + 8, chunk0);
  copies.wait<0>();
  copy_words(mine + 12, chunk1);
}
void cp_async_groups(std::uint32_t* seen, const std::uint32_t* src, int src_bytes, void* stream) {
  PB_LAUNCH(cp_async_groups_kernel, dim3(1), dim3(32), 0, stream)(seen, src, src_bytes);
  PB_CHECK_LAUNCH();
}

__global__ void tensor_core_misuse_kernel(int what) {
  __shared__ __align__(16) std::uint16_t s[32 * 8 + 8];
  s[threadIdx.x] = 0;
  if (what == 0) {
    if (threadIdx.x >= 16) return;
    std::uint32_t a[4] = {}, b[2] = {};
    float c[4] = {}, d[4];
    mma_m16n8k16_bf16(d, a, b, c);
  } else if (what == 1) {
    std::uint32_t r[1];
    ldmatrix_m8n8<1>(r, s + threadIdx.x * 8 + 1);
  } else {
    AsyncCopies copies;
    copies.copy16(s + 1, s + 8, 16);
  }
}
void tensor_core_misuse(int what, void* stream) {
  PB_LAUNCH(tensor_core_misuse_kernel, dim3(1), dim3(32), 0, stream)(what);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
