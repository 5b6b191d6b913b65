// simt twins of the tensor-core building blocks of device/mma.h: mma.sync m16n8k16, ldmatrix m8n8 and cp.async,
// with the PTX ISA's fragment layouts, as warp collectives that exchange the lanes' operands through a per-warp area.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "device/simt/simt_device.h"
#include "device/simt/simt_types.h"

namespace parbench::simt {
namespace mma_detail {

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
  std::fprintf(stderr, "simt: %s at %s:%d\n", what, file, line);
  std::abort();
}

inline int linear_thread() {
  return int(threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y);
}

// One warp's exchange slots: 8 words per lane. thread_local is per block (a block never leaves its OS thread), as
// __shared__ is; a block has at most 32 warps.
struct WarpSlots {
  std::uint64_t lane[32][8];
};
inline WarpSlots& warp_slots() {
  static thread_local WarpSlots slots[32];
  return slots[linear_thread() / 32];
}

// Publishes `bytes` of this lane's operands and returns the warp's slots once every lane has published; the
// caller reads them, then waits at a __syncwarp so that no lane's next exchange overwrites slots still read.
// mma and ldmatrix need all 32 lanes (.aligned): a warp with exited lanes is an error, as in wmma::mma_sync.
inline const WarpSlots& exchange(const void* mine, std::size_t bytes, const char* what, const char* file, int line) {
  WarpSlots& s = warp_slots();
  std::memcpy(s.lane[linear_thread() % 32], mine, bytes);
  __syncwarp(0xffffffffu, file, line);
  // Only now has every lane either arrived or exited, whatever order the lanes ran in.
  if (__activemask() != 0xffffffffu) fail(what, file, line);
  return s;
}

inline float bf16_lo(std::uint32_t w) { return float16::bf16_bits_to_float(std::uint16_t(w)); }
inline float bf16_hi(std::uint32_t w) { return float16::bf16_bits_to_float(std::uint16_t(w >> 16)); }
inline float f16_lo(std::uint32_t w) { return float16::f16_bits_to_float(std::uint16_t(w)); }
inline float f16_hi(std::uint32_t w) { return float16::f16_bits_to_float(std::uint16_t(w >> 16)); }

struct MmaOperands {
  std::uint32_t a[4], b[2];
};

// mma.m16n8k16 with 16-bit inputs (Bf16: bf16, else f16), fp32 accumulators. ISA layout, g = lane / 4,
// t = lane % 4: A register i holds row g + 8 * (i % 2), columns 2t + 8 * (i / 2) (low half) and +1 (high half);
// B register i holds rows (k) 2t + 8i and 2t + 8i + 1 of column g; C/D element i is row g + 8 * (i / 2),
// column 2t + i % 2. The products are exact in double; each D element is rounded to fp32 once.
template <bool Bf16>
inline void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                         const float (&c)[4], const char* file, int line) {
  MmaOperands mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
  const WarpSlots& s = exchange(&mine, sizeof mine, "mma.sync m16n8k16 needs all 32 lanes of the warp", file, line);
  auto elem = [](std::uint32_t w, int half) {
    if constexpr (Bf16) return half ? bf16_hi(w) : bf16_lo(w);
    else return half ? f16_hi(w) : f16_lo(w);
  };
  auto A = [&](int row, int k) {
    MmaOperands o;
    std::memcpy(&o, s.lane[4 * (row % 8) + (k % 8) / 2], sizeof o);
    return elem(o.a[row / 8 + 2 * (k / 8)], k % 2);
  };
  auto B = [&](int k, int col) {
    MmaOperands o;
    std::memcpy(&o, s.lane[4 * col + (k % 8) / 2], sizeof o);
    return elem(o.b[k / 8], k % 2);
  };
  const int lane = linear_thread() % 32, g = lane / 4, t = lane % 4;
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
    double acc = c[i];
    for (int k = 0; k < 16; ++k) acc += double(A(row, k)) * double(B(k, col));
    out[i] = float(acc);
  }
  __syncwarp(0xffffffffu, file, line);  // every lane has read the slots before any lane's next exchange writes
  std::memcpy(d, out, sizeof out);
}

// ldmatrix m8n8 .b16 with N matrices: lane 8j + r gives the address of row r of matrix j (16 bytes, 16-byte
// aligned); register j of lane l gets row l / 4, columns 2 (l % 4) and +1, or with .trans column l / 4, rows
// 2 (l % 4) and +1 (the matrix transposed). Lanes past 8N give no address.
template <int N, bool Trans>
inline void ldmatrix(std::uint32_t (&r)[N], const void* row, const char* file, int line) {
  const int lane = linear_thread() % 32;
  if (lane < 8 * N && reinterpret_cast<std::uintptr_t>(row) % 16 != 0)
    fail("ldmatrix row address not 16-byte aligned", file, line);
  const WarpSlots& s = exchange(&row, sizeof row, "ldmatrix needs all 32 lanes of the warp", file, line);
  auto at = [&](int j, int mrow, int col) {
    const std::uint16_t* p;
    std::memcpy(&p, s.lane[8 * j + mrow], sizeof p);
    return std::uint32_t(p[col]);
  };
  std::uint32_t out[N];
  for (int j = 0; j < N; ++j) {
    if (Trans)
      out[j] = at(j, 2 * (lane % 4), lane / 4) | at(j, 2 * (lane % 4) + 1, lane / 4) << 16;
    else
      out[j] = at(j, lane / 4, 2 * (lane % 4)) | at(j, lane / 4, 2 * (lane % 4) + 1) << 16;
  }
  __syncwarp(0xffffffffu, file, line);
  std::memcpy(r, out, sizeof out);
}

}  // namespace mma_detail

// cp.async.cg.shared.global of 16 bytes, per thread. The source is read at issue; the destination holds 0xff
// bytes (NaN in bf16/f16/f32) until a wait_group retires the copy's group, so a read of the tile before its wait
// shows in the results. Copies still pending when the object dies land then, as they would on a GPU.
class AsyncCopies {
 public:
  AsyncCopies() = default;
  AsyncCopies(const AsyncCopies&) = delete;
  AsyncCopies& operator=(const AsyncCopies&) = delete;
  ~AsyncCopies() { land(groups_ + 1); }

  // Copies src_bytes (0..16) from src and zero-fills the rest of the 16 bytes at dst (both 16-byte aligned).
  void copy16(void* dst, const void* src, int src_bytes, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
    if (reinterpret_cast<std::uintptr_t>(dst) % 16 || (src_bytes > 0 && reinterpret_cast<std::uintptr_t>(src) % 16))
      mma_detail::fail("cp.async address not 16-byte aligned", file, line);
    if (n_ == kCapacity) mma_detail::fail("more than 64 cp.async copies in flight in one thread", file, line);
    Pending& p = pending_[n_++];
    p.dst = dst;
    p.group = groups_;
    std::memset(p.bytes, 0, 16);
    if (src_bytes > 0) std::memcpy(p.bytes, src, std::size_t(src_bytes > 16 ? 16 : src_bytes));
    std::memset(dst, 0xff, 16);
  }
  void commit() { ++groups_; }
  // cp.async.wait_group N: every committed group but the newest N has landed.
  template <int N>
  void wait() {
    land(groups_ - N);
  }

 private:
  struct Pending {
    void* dst;
    int group;
    unsigned char bytes[16];
  };
  static constexpr int kCapacity = 64;
  // Lands the copies of groups before `end`, in issue order, and keeps the rest.
  void land(int end) {
    int kept = 0;
    for (int i = 0; i < n_; ++i) {
      if (pending_[i].group < end) std::memcpy(pending_[i].dst, pending_[i].bytes, 16);
      else pending_[kept++] = pending_[i];
    }
    n_ = kept;
  }
  Pending pending_[kCapacity];
  int n_ = 0, groups_ = 0;
};

inline void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                              const float (&c)[4], const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mma_detail::mma_m16n8k16<true>(d, a, b, c, file, line);
}
inline void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                             const float (&c)[4], const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mma_detail::mma_m16n8k16<false>(d, a, b, c, file, line);
}
template <int N, bool Trans = false>
inline void ldmatrix_m8n8(std::uint32_t (&r)[N], const void* row, const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
  mma_detail::ldmatrix<N, Trans>(r, row, file, line);
}

}  // namespace parbench::simt
