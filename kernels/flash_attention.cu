// Causal attention, flash style: tiles of 32 queries x 32 keys staged through shared memory, online softmax
// (running max and sum), only the log-sum-exp saved. The backward recomputes the probabilities from lse and runs
// two passes without atomics: one over key tiles (dk, dv) and one over query tiles (dq). One thread owns one query
// (or key) row; rows are padded by one float in shared memory. Grouped-query attention as in attention.cu: inp
// (B,T,(NH + 2 KV) hs), query head h reads kv head h / (NH / KV) where it lies; the key pass of a kv head walks the
// query heads of its group one after the other, so its dk and dv are sums in a fixed order, without atomics.
// bf16 at head sizes 64 and 128 takes the tensor-core kernels instead (flash_mma_fwd.h, flash_mma_bwd.h); these
// scalar ones are the fallback for f32 and the other head sizes.
#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "device/kernel_common.h"
#include "kernels/acc_type.h"
#include "kernels/flash_mma_bwd.h"
#include "kernels/flash_mma_fwd.h"

namespace parbench::PB_KERNEL_NS {

// A token's row of inp: NH query heads, KV key heads, KV value heads of hs channels.
struct FlashLayout {
  int C, NH, KV, hs;
  __host__ __device__ std::int64_t ld() const { return C + 2 * std::int64_t(KV) * hs; }
  __host__ __device__ int group() const { return NH / KV; }
  __host__ __device__ int key(int kvh) const { return C + kvh * hs; }
  __host__ __device__ int value(int kvh) const { return C + (KV + kvh) * hs; }
};

// The largest head size C/NH the flash kernels take.
inline constexpr int kFlashMaxHeadSize = 128;

constexpr int kFB = 32;  // rows per tile, queries and keys alike; also the block size

template <class T>
__global__ void flash_forward_kernel(T* out, float* lse, const T* inp, int T_, FlashLayout L, float scale) {
  PB_DYNAMIC_SHARED(float, smem);
  const int C = L.C, NH = L.NH, hs = L.hs, S = hs + 1;
  float *qs = smem, *os = qs + kFB * S, *ks = os + kFB * S, *vs = ks + kFB * S;
  int bh = blockIdx.y, b = bh / NH, h = bh % NH;
  int q0 = blockIdx.x * kFB, r = threadIdx.x, i = q0 + r;
  bool active = i < T_;
  std::int64_t row3 = L.ld();
  const T* rows = inp + std::int64_t(b) * T_ * row3;
  const T *base = rows + h * hs, *kb = rows + L.key(h / L.group()), *vb = rows + L.value(h / L.group());
  for (int d = 0; d < hs; ++d) {
    qs[r * S + d] = active ? to_f(base[i * row3 + d]) * scale : 0.f;
    os[r * S + d] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  int last = min(q0 + kFB, T_);  // this tile's queries see keys [0, last)
  for (int k0 = 0; k0 < last; k0 += kFB) {
    __syncthreads();  // the previous tile's readers are done
    for (int e = r; e < kFB * hs; e += blockDim.x) {
      int jj = e / hs, d = e % hs, j = k0 + jj;
      ks[jj * S + d] = j < T_ ? to_f(kb[j * row3 + d]) : 0.f;
      vs[jj * S + d] = j < T_ ? to_f(vb[j * row3 + d]) : 0.f;
    }
    __syncthreads();
    if (!active || k0 > i) continue;
    float s[kFB];
    float tile_max = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < kFB; ++jj) {
      float v = -INFINITY;
      if (k0 + jj <= i) {
        v = 0.f;
        for (int d = 0; d < hs; ++d) v += qs[r * S + d] * ks[jj * S + d];
      }
      s[jj] = v;
      tile_max = fmaxf(tile_max, v);
    }
    float m_new = fmaxf(m, tile_max);  // finite: key k0 <= i is in this tile
    float corr = expf(m - m_new);      // 0 on the first tile (m = -inf)
    l *= corr;
    for (int d = 0; d < hs; ++d) os[r * S + d] *= corr;
#pragma unroll
    for (int jj = 0; jj < kFB; ++jj) {
      float p = expf(s[jj] - m_new);  // 0 for masked keys
      l += p;
      if (p != 0.f)
        for (int d = 0; d < hs; ++d) os[r * S + d] += p * vs[jj * S + d];
    }
    m = m_new;
  }
  if (!active) return;
  T* o = out + (std::int64_t(b) * T_ + i) * C + h * hs;
  for (int d = 0; d < hs; ++d) o[d] = from_f<T>(os[r * S + d] / l);
  lse[std::int64_t(bh) * T_ + i] = m + logf(l);
}

// delta[b,h,t] = dout[t] . out[t] over the head's channels (= sum_j p_j dp_j).
template <class T>
__global__ void flash_delta_kernel(float* delta, const T* dout, const T* out, int B, int T_, int C, int NH) {
  std::int64_t n = std::int64_t(B) * NH * T_;
  int hs = C / NH;
  for (std::int64_t idx = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; idx < n;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    int t = int(idx % T_), h = int(idx / T_ % NH), b = int(idx / T_ / NH);
    std::int64_t o = (std::int64_t(b) * T_ + t) * C + h * hs;
    float s = 0.f;
    for (int d = 0; d < hs; ++d) s += to_f(dout[o + d]) * to_f(out[o + d]);
    delta[idx] = s;
  }
}

// dk, dv for a tile of keys of kv head kvh: each thread owns key j and walks, for each query head of the group in
// turn, the queries i >= j tile by tile, summing into the same accumulators.
template <class T>
__global__ void flash_backward_dkdv_kernel(T* dinp, const float* delta, const T* dout, const T* inp, const float* lse,
                                           int T_, FlashLayout L, float scale) {
  PB_DYNAMIC_SHARED(float, smem);
  const int C = L.C, hs = L.hs, S = hs + 1;
  float *ks = smem, *vs = ks + kFB * S, *dks = vs + kFB * S, *dvs = dks + kFB * S, *qs = dvs + kFB * S,
        *dos = qs + kFB * S, *lse_s = dos + kFB * S, *delta_s = lse_s + kFB;
  int b = blockIdx.y / L.KV, kvh = blockIdx.y % L.KV;
  int k0 = blockIdx.x * kFB, r = threadIdx.x, j = k0 + r;
  bool active = j < T_;
  std::int64_t row3 = L.ld();
  const T* rows = inp + std::int64_t(b) * T_ * row3;
  for (int d = 0; d < hs; ++d) {
    ks[r * S + d] = active ? to_f(rows[j * row3 + L.key(kvh) + d]) : 0.f;
    vs[r * S + d] = active ? to_f(rows[j * row3 + L.value(kvh) + d]) : 0.f;
    dks[r * S + d] = 0.f;
    dvs[r * S + d] = 0.f;
  }
  for (int h = kvh * L.group(); h < (kvh + 1) * L.group(); ++h) {
    const std::int64_t bh = std::int64_t(b) * L.NH + h;
    const T* base = rows + h * hs;
    const T* gbase = dout + std::int64_t(b) * T_ * C + h * hs;
    for (int q0 = k0; q0 < T_; q0 += kFB) {
      __syncthreads();
      for (int e = r; e < kFB * hs; e += blockDim.x) {
        int ii = e / hs, d = e % hs, i = q0 + ii;
        qs[ii * S + d] = i < T_ ? to_f(base[i * row3 + d]) : 0.f;
        dos[ii * S + d] = i < T_ ? to_f(gbase[i * std::int64_t(C) + d]) : 0.f;
      }
      if (q0 + r < T_) {
        lse_s[r] = lse[bh * T_ + q0 + r];
        delta_s[r] = delta[bh * T_ + q0 + r];
      }
      __syncthreads();
      if (!active) continue;
      for (int ii = 0; ii < kFB; ++ii) {
        int i = q0 + ii;
        if (i < j || i >= T_) continue;
        float s = 0.f, dp = 0.f;
        for (int d = 0; d < hs; ++d) {
          s += qs[ii * S + d] * ks[r * S + d];
          dp += dos[ii * S + d] * vs[r * S + d];
        }
        float p = expf(s * scale - lse_s[ii]);
        float ds = p * (dp - delta_s[ii]) * scale;
        for (int d = 0; d < hs; ++d) {
          dvs[r * S + d] += p * dos[ii * S + d];
          dks[r * S + d] += ds * qs[ii * S + d];
        }
      }
    }
  }
  if (!active) return;
  T* g = dinp + (std::int64_t(b) * T_ + j) * row3;
  for (int d = 0; d < hs; ++d) {
    g[L.key(kvh) + d] = from_f<T>(dks[r * S + d]);
    g[L.value(kvh) + d] = from_f<T>(dvs[r * S + d]);
  }
}

// dq for a tile of queries: each thread owns query i and walks the keys j <= i (of its kv head) tile by tile.
template <class T>
__global__ void flash_backward_dq_kernel(T* dinp, const float* delta, const T* dout, const T* inp, const float* lse,
                                         int T_, FlashLayout L, float scale) {
  PB_DYNAMIC_SHARED(float, smem);
  const int C = L.C, NH = L.NH, hs = L.hs, S = hs + 1;
  float *qs = smem, *dos = qs + kFB * S, *dqs = dos + kFB * S, *ks = dqs + kFB * S, *vs = ks + kFB * S;
  int bh = blockIdx.y, b = bh / NH, h = bh % NH;
  int q0 = blockIdx.x * kFB, r = threadIdx.x, i = q0 + r;
  bool active = i < T_;
  std::int64_t row3 = L.ld();
  const T* rows = inp + std::int64_t(b) * T_ * row3;
  const T *base = rows + h * hs, *kb = rows + L.key(h / L.group()), *vb = rows + L.value(h / L.group());
  const T* gbase = dout + std::int64_t(b) * T_ * C + h * hs;
  for (int d = 0; d < hs; ++d) {
    qs[r * S + d] = active ? to_f(base[i * row3 + d]) : 0.f;
    dos[r * S + d] = active ? to_f(gbase[i * std::int64_t(C) + d]) : 0.f;
    dqs[r * S + d] = 0.f;
  }
  float l = active ? lse[std::int64_t(bh) * T_ + i] : 0.f;
  float dl = active ? delta[std::int64_t(bh) * T_ + i] : 0.f;
  int last = min(q0 + kFB, T_);
  for (int k0 = 0; k0 < last; k0 += kFB) {
    __syncthreads();
    for (int e = r; e < kFB * hs; e += blockDim.x) {
      int jj = e / hs, d = e % hs, j = k0 + jj;
      ks[jj * S + d] = j < T_ ? to_f(kb[j * row3 + d]) : 0.f;
      vs[jj * S + d] = j < T_ ? to_f(vb[j * row3 + d]) : 0.f;
    }
    __syncthreads();
    if (!active) continue;
    for (int jj = 0; jj < kFB && k0 + jj <= i; ++jj) {
      float s = 0.f, dp = 0.f;
      for (int d = 0; d < hs; ++d) {
        s += qs[r * S + d] * ks[jj * S + d];
        dp += dos[r * S + d] * vs[jj * S + d];
      }
      float ds = expf(s * scale - l) * (dp - dl) * scale;
      for (int d = 0; d < hs; ++d) dqs[r * S + d] += ds * ks[jj * S + d];
    }
  }
  if (!active) return;
  T* g = dinp + (std::int64_t(b) * T_ + i) * row3 + h * hs;
  for (int d = 0; d < hs; ++d) g[d] = from_f<T>(dqs[r * S + d]);
}

namespace {
FlashLayout check_heads(int C, int NH, int KV) {
  PB_CHECK(NH > 0 && C % NH == 0, "flash attention: C=" + std::to_string(C) + " is not a multiple of NH=" +
                                      std::to_string(NH));
  PB_CHECK(KV > 0 && NH % KV == 0, "flash attention: KV=" + std::to_string(KV) + " kv heads do not divide NH=" +
                                       std::to_string(NH) + " query heads");
  PB_CHECK(C / NH <= kFlashMaxHeadSize, "flash attention: head size " + std::to_string(C / NH) +
                                            " is above the supported maximum " + std::to_string(kFlashMaxHeadSize));
  return FlashLayout{C, NH, KV, C / NH};
}
// Kernels above the default 48 KiB of dynamic shared memory must opt in (head sizes above 64 or so).
template <class K>
void allow_smem(K kernel, std::size_t bytes) {
  if (bytes > 48 * 1024) CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}
// Whether the tensor-core kernels take this call: bf16, head size 64 or 128, and 16-byte aligned bases (cp.async
// moves 16-byte chunks of rows; C, a multiple of the head size, keeps every row aligned).
template <class T>
bool use_mma(int hs, std::initializer_list<const void*> bases) {
  if (!std::is_same_v<T, ::parbench::bf16> || !flash_mma_head_size(hs)) return false;
  for (const void* p : bases)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}
}  // namespace

template <class T>
void flash_attention_forward(T* out, acc_t<T>* lse, const T* inp, int B, int T_, int C, int NH, int KV, void* stream) {
  const FlashLayout L = check_heads(C, NH, KV);
  if (B == 0 || T_ == 0) return;
  int hs = C / NH;
  if constexpr (std::is_same_v<T, ::parbench::bf16>) {
    if (use_mma<T>(hs, {out, inp})) {
      flash_mma_with_head_size(hs, [&](auto head) {
        launch_flash_mma_forward<decltype(head)::value>(dev(out), lse, dev(inp), B, T_, C, NH, KV, stream);
      });
      return;
    }
  }
  std::size_t smem = 4 * kFB * (hs + 1) * sizeof(float);
  allow_smem(flash_forward_kernel<DevT<T>>, smem);
  PB_LAUNCH(flash_forward_kernel<DevT<T>>, dim3(ceil_div(T_, kFB), B * NH), kFB, smem, stream)
  (dev(out), lse, dev(inp), T_, L, 1.f / std::sqrt(float(hs)));
  PB_CHECK_LAUNCH();
}

template <class T>
void flash_attention_backward(T* dinp, acc_t<T>* scratch, const T* dout, const T* inp, const T* out,
                              const acc_t<T>* lse, int B, int T_, int C, int NH, int KV, void* stream) {
  const FlashLayout L = check_heads(C, NH, KV);
  if (B == 0 || T_ == 0) return;
  int hs = C / NH;
  float scale = 1.f / std::sqrt(float(hs));
  PB_LAUNCH(flash_delta_kernel<DevT<T>>, grid_for(std::int64_t(B) * NH * T_, 256), 256, 0, stream)
  (scratch, dev(dout), dev(out), B, T_, C, NH);
  PB_CHECK_LAUNCH();
  if constexpr (std::is_same_v<T, ::parbench::bf16>) {
    if (use_mma<T>(hs, {dinp, dout, inp})) {
      flash_mma_with_head_size(hs, [&](auto head) {
        launch_flash_mma_backward<decltype(head)::value>(dev(dinp), scratch, dev(dout), dev(inp), lse, B, T_, C, NH,
                                                         KV, stream);
      });
      return;
    }
  }
  // The key pass has a block per kv head's key tile, the query pass one per query head's query tile.
  std::size_t smem_kv = (6 * kFB * (hs + 1) + 2 * kFB) * sizeof(float);
  allow_smem(flash_backward_dkdv_kernel<DevT<T>>, smem_kv);
  PB_LAUNCH(flash_backward_dkdv_kernel<DevT<T>>, dim3(ceil_div(T_, kFB), B * KV), kFB, smem_kv, stream)
  (dev(dinp), scratch, dev(dout), dev(inp), lse, T_, L, scale);
  PB_CHECK_LAUNCH();
  std::size_t smem_q = 5 * kFB * (hs + 1) * sizeof(float);
  allow_smem(flash_backward_dq_kernel<DevT<T>>, smem_q);
  PB_LAUNCH(flash_backward_dq_kernel<DevT<T>>, dim3(ceil_div(T_, kFB), B * NH), kFB, smem_q, stream)
  (dev(dinp), scratch, dev(dout), dev(inp), lse, T_, L, scale);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                           \
  template void flash_attention_forward<T>(T*, acc_t<T>*, const T*, int, int, int, int, int, void*);                \
  template void flash_attention_backward<T>(T*, acc_t<T>*, const T*, const T*, const T*, const acc_t<T>*, int, int, \
                                            int, int, int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
