// Causal attention, plain version: materializes the (B,NH,T,T) scores and probabilities. Grouped-query: inp
// (B,T,(NH + 2 KV) hs) holds per token NH query heads, then KV key heads, then KV value heads, hs = C/NH channels
// each; query head h reads kv head h / (NH / KV) in place (KV = NH is multi-head attention, q|k|v of 3C).
#include <cmath>

#include "device/kernel_common.h"
#include "kernels/acc_type.h"

namespace parbench::PB_KERNEL_NS {

// Where a head's channels are in a token's row of inp: the query heads, then the KV key heads, then the KV value
// heads.
struct AttnLayout {
  int C, NH, KV, hs;
  __host__ __device__ AttnLayout(int C_, int NH_, int KV_) : C(C_), NH(NH_), KV(KV_), hs(C_ / NH_) {}
  __host__ __device__ std::int64_t ld() const { return C + 2 * std::int64_t(KV) * hs; }
  __host__ __device__ int group() const { return NH / KV; }
  __host__ __device__ int key(int kvh) const { return C + kvh * hs; }
  __host__ __device__ int value(int kvh) const { return C + (KV + kvh) * hs; }
};

// att[b,h,t,t2] = q[t].k[t2] * scale for t2 <= t (the rest is filled by the softmax).
template <class T>
__global__ void attention_scores_kernel(float* att, const T* inp, int B, int T_, AttnLayout L, float scale) {
  const int NH = L.NH, hs = L.hs;
  std::int64_t n = std::int64_t(B) * NH * T_ * T_;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    int t2 = int(i % T_), t = int(i / T_ % T_), h = int(i / T_ / T_ % NH), b = int(i / T_ / T_ / NH);
    if (t2 > t) continue;
    const T* q = inp + (std::int64_t(b) * T_ + t) * L.ld() + h * hs;
    const T* k = inp + (std::int64_t(b) * T_ + t2) * L.ld() + L.key(h / L.group());
    float s = 0.f;
    for (int d = 0; d < hs; ++d) s += to_f(q[d]) * to_f(k[d]);
    att[i] = s * scale;
  }
}

// In-place causal softmax of each row: one warp per row, zeros above the diagonal.
__global__ void attention_softmax_kernel(float* att, int rows, int T_) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  int t = row % T_;
  float* p = att + std::int64_t(row) * T_;
  float mx = -INFINITY;
  for (int j = lane; j <= t; j += 32) mx = fmaxf(mx, p[j]);
  mx = warp_max(mx);
  float s = 0.f;
  for (int j = lane; j <= t; j += 32) s += expf(p[j] - mx);
  s = warp_sum(s);
  for (int j = lane; j < T_; j += 32) p[j] = j <= t ? expf(p[j] - mx) / s : 0.f;
}

// out[b,t,h,d] = sum_{t2<=t} att[b,h,t,t2] v[b,t2,h,d]: one thread per output element.
template <class T>
__global__ void attention_values_kernel(T* out, const float* att, const T* inp, int B, int T_, AttnLayout L) {
  const int C = L.C, NH = L.NH, hs = L.hs;
  std::int64_t n = std::int64_t(B) * T_ * C;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    int c = int(i % C), t = int(i / C % T_), b = int(i / C / T_);
    int h = c / hs;
    const float* p = att + ((std::int64_t(b) * NH + h) * T_ + t) * T_;
    const T* v = inp + std::int64_t(b) * T_ * L.ld() + L.value(h / L.group()) + c % hs;
    float o = 0.f;
    for (int t2 = 0; t2 <= t; ++t2) o += p[t2] * to_f(v[t2 * L.ld()]);
    out[i] = from_f<T>(o);
  }
}

// dp[b,h,t,t2] = dout[t].v[t2] for t2 <= t.
template <class T>
__global__ void attention_dprobs_kernel(float* dp, const T* dout, const T* inp, int B, int T_, AttnLayout L) {
  const int C = L.C, NH = L.NH, hs = L.hs;
  std::int64_t n = std::int64_t(B) * NH * T_ * T_;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    int t2 = int(i % T_), t = int(i / T_ % T_), h = int(i / T_ / T_ % NH), b = int(i / T_ / T_ / NH);
    if (t2 > t) {
      dp[i] = 0.f;
      continue;
    }
    const T* g = dout + (std::int64_t(b) * T_ + t) * C + h * hs;
    const T* v = inp + (std::int64_t(b) * T_ + t2) * L.ld() + L.value(h / L.group());
    float s = 0.f;
    for (int d = 0; d < hs; ++d) s += to_f(g[d]) * to_f(v[d]);
    dp[i] = s;
  }
}

// Softmax backward in place: ds = p (dp - sum_j p_j dp_j) * scale; one warp per row.
__global__ void attention_softmax_backward_kernel(float* ds, const float* att, int rows, int T_, float scale) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  int t = row % T_;
  const float* p = att + std::int64_t(row) * T_;
  float* d = ds + std::int64_t(row) * T_;
  float s = 0.f;
  for (int j = lane; j <= t; j += 32) s += p[j] * d[j];
  s = warp_sum(s);
  for (int j = lane; j <= t; j += 32) d[j] = p[j] * (d[j] - s) * scale;
}

// dinp (B,T,(NH + 2 KV) hs), one thread per element: dq[t] = sum_{t2<=t} ds[t,t2] k[t2]; dk[t] = sum_{tq>=t}
// ds[tq,t] q[tq]; dv[t] = sum_{tq>=t} att[tq,t] dout[tq]. A kv head's dk and dv sum over the query heads of its
// group, in head order inside the one thread that owns the element: no atomics, the same sums every run (and
// with KV = NH the same additions as multi-head attention). Every element is written exactly once.
template <class T>
__global__ void attention_dinp_kernel(T* dinp, const float* ds, const float* att, const T* dout, const T* inp, int B,
                                      int T_, AttnLayout L) {
  const int C = L.C, NH = L.NH, hs = L.hs, KVC = L.KV * hs;
  const std::int64_t ld = L.ld();
  std::int64_t n = std::int64_t(B) * T_ * ld;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    int c = int(i % ld), t = int(i / ld % T_), b = int(i / ld / T_);
    const T* rows = inp + std::int64_t(b) * T_ * ld;
    float g = 0.f;
    if (c < C) {
      const int h = c / hs;
      const float* dsb = ds + (std::int64_t(b) * NH + h) * T_ * T_;
      const T* k = rows + L.key(h / L.group()) + c % hs;
      for (int t2 = 0; t2 <= t; ++t2) g += dsb[std::int64_t(t) * T_ + t2] * to_f(k[t2 * ld]);
    } else {
      const bool key = c < C + KVC;
      const int kvh = (c - C) % KVC / hs, d = (c - C) % hs;
      for (int h = kvh * L.group(); h < (kvh + 1) * L.group(); ++h) {
        const float* pb = (key ? ds : att) + (std::int64_t(b) * NH + h) * T_ * T_;
        const T* x = key ? rows + h * hs + d : dout + std::int64_t(b) * T_ * C + h * hs + d;
        const std::int64_t step = key ? ld : C;
        for (int tq = t; tq < T_; ++tq) g += pb[std::int64_t(tq) * T_ + t] * to_f(x[tq * step]);
      }
    }
    dinp[i] = from_f<T>(g);
  }
}

namespace {
// The layout of inp from C, NH and KV, which the op's checks have validated.
AttnLayout attn_layout(int C, int NH, int KV) {
  PB_CHECK(NH > 0 && C % NH == 0, "attention: C=" + std::to_string(C) + " is not a multiple of NH=" + std::to_string(NH));
  PB_CHECK(KV > 0 && NH % KV == 0, "attention: KV=" + std::to_string(KV) + " kv heads do not divide NH=" +
                                       std::to_string(NH) + " query heads");
  return AttnLayout(C, NH, KV);
}
}  // namespace

template <class T>
void attention_forward(T* out, acc_t<T>* att, const T* inp, int B, int T_, int C, int NH, int KV, void* stream) {
  const AttnLayout L = attn_layout(C, NH, KV);
  std::int64_t scores = std::int64_t(B) * NH * T_ * T_;
  if (scores == 0) return;
  float scale = 1.f / std::sqrt(float(C / NH));
  PB_LAUNCH(attention_scores_kernel<DevT<T>>, grid_for(scores, 256), 256, 0, stream)(att, dev(inp), B, T_, L, scale);
  PB_CHECK_LAUNCH();
  int rows = B * NH * T_;
  PB_LAUNCH(attention_softmax_kernel, ceil_div(rows, 8), 256, 0, stream)(att, rows, T_);
  PB_CHECK_LAUNCH();
  PB_LAUNCH(attention_values_kernel<DevT<T>>, grid_for(std::int64_t(B) * T_ * C, 256), 256, 0, stream)
  (dev(out), att, dev(inp), B, T_, L);
  PB_CHECK_LAUNCH();
}

template <class T>
void attention_backward(T* dinp, acc_t<T>* scratch, const T* dout, const T* inp, const acc_t<T>* att, int B, int T_,
                        int C, int NH, int KV, void* stream) {
  const AttnLayout L = attn_layout(C, NH, KV);
  std::int64_t scores = std::int64_t(B) * NH * T_ * T_;
  if (scores == 0) return;
  float scale = 1.f / std::sqrt(float(C / NH));
  PB_LAUNCH(attention_dprobs_kernel<DevT<T>>, grid_for(scores, 256), 256, 0, stream)
  (scratch, dev(dout), dev(inp), B, T_, L);
  PB_CHECK_LAUNCH();
  int rows = B * NH * T_;
  PB_LAUNCH(attention_softmax_backward_kernel, ceil_div(rows, 8), 256, 0, stream)(scratch, att, rows, T_, scale);
  PB_CHECK_LAUNCH();
  PB_LAUNCH(attention_dinp_kernel<DevT<T>>, grid_for(std::int64_t(B) * T_ * L.ld(), 256), 256, 0, stream)
  (dev(dinp), scratch, att, dev(dout), dev(inp), B, T_, L);
  PB_CHECK_LAUNCH();
}

#define PB_INSTANTIATE(T)                                                                                     \
  template void attention_forward<T>(T*, acc_t<T>*, const T*, int, int, int, int, int, void*);                \
  template void attention_backward<T>(T*, acc_t<T>*, const T*, const T*, const acc_t<T>*, int, int, int, int, \
                                      int, void*);
PB_INSTANTIATE(float)
PB_INSTANTIATE(::parbench::bf16)
#undef PB_INSTANTIATE

}  // namespace parbench::PB_KERNEL_NS
