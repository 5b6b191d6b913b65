// simt emulator, part 3: nvcuda::wmma. Each lane holds a contiguous slice of the tile in row-major
// order (CUDA leaves the element mapping unspecified); mma_sync is a warp collective computed in fp32.
#pragma once
#include "device/simt/simt_device.h"

namespace parbench::simt {
namespace detail {
// One lane's share of an mma: its A, B and C elements as float, and where D comes back.
struct MmaLane {
  int m, n, k;
  float a[16], b[16], c[8], d[8];
};
}  // namespace detail

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int M, int N, int K> struct TileShape;
template <int M, int N, int K> struct TileShape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct TileShape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct TileShape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert((M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16),
                "simt wmma supports the 16x16x16, 32x8x16 and 8x32x16 shapes");

 public:
  using element_type = T;
  using use = Use;
  using layout = Layout;
  static constexpr int rows = detail::TileShape<Use, M, N, K>::rows;
  static constexpr int cols = detail::TileShape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols / 32;
  T x[num_elements];
};

// Which tile element (row, col) lane `lane`'s element `e` is.
inline int frag_row(int lane, int e, int cols, int n) { return (lane * n + e) / cols; }
inline int frag_col(int lane, int e, int cols, int n) { return (lane * n + e) % cols; }
inline int lane_id() {
  return int((threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y) % 32);
}

template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& v) {
  for (auto& e : f.x) e = T(v);
}

// Loads and stores touch only the lane's own slice, so they need no rendezvous.
template <class Use, int M, int N, int K, class T, class L, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const P* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "accumulator loads take a layout_t argument");
  using F = fragment<Use, M, N, K, T, L>;
  const int lane = lane_id();
  for (int e = 0; e < F::num_elements; ++e) {
    int r = frag_row(lane, e, F::cols, F::num_elements), c = frag_col(lane, e, F::cols, F::num_elements);
    f.x[e] = std::is_same_v<L, col_major> ? T(p[std::size_t(c) * ldm + r]) : T(p[std::size_t(r) * ldm + c]);
  }
}
template <int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const P* p, unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T, void>;
  const int lane = lane_id();
  for (int e = 0; e < F::num_elements; ++e) {
    int r = frag_row(lane, e, F::cols, F::num_elements), c = frag_col(lane, e, F::cols, F::num_elements);
    f.x[e] = layout == mem_col_major ? T(p[std::size_t(c) * ldm + r]) : T(p[std::size_t(r) * ldm + c]);
  }
}
template <int M, int N, int K, class T, class P>
inline void store_matrix_sync(P* p, const fragment<accumulator, M, N, K, T, void>& f, unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T, void>;
  const int lane = lane_id();
  for (int e = 0; e < F::num_elements; ++e) {
    int r = frag_row(lane, e, F::cols, F::num_elements), c = frag_col(lane, e, F::cols, F::num_elements);
    (layout == mem_col_major ? p[std::size_t(c) * ldm + r] : p[std::size_t(r) * ldm + c]) = P(f.x[e]);
  }
}

// D = A * B + C over the warp: every lane hands its slices to the last lane to arrive, which
// computes the whole tile in fp32 (products of bf16/fp16 are exact in fp32) and hands D back.
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, M, N, K, TD, void>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                     const fragment<matrix_b, M, N, K, TB, LB>& b, const fragment<accumulator, M, N, K, TC, void>& c,
                     const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  simt::detail::MmaLane lane{M, N, K, {}, {}, {}, {}};
  for (int e = 0; e < a.num_elements; ++e) lane.a[e] = float(a.x[e]);
  for (int e = 0; e < b.num_elements; ++e) lane.b[e] = float(b.x[e]);
  for (int e = 0; e < c.num_elements; ++e) lane.c[e] = float(c.x[e]);
  simt::detail::warp_collective({simt::detail::WarpOp::mma, 0xffffffffu, 0, 0, 32, &lane}, file, line);
  for (int e = 0; e < d.num_elements; ++e) d.x[e] = TD(lane.d[e]);
}

}  // namespace nvcuda::wmma
}  // namespace parbench::simt
