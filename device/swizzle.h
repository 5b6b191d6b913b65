// XOR swizzles of shared-memory tiles of 16-byte chunks, for the host (tests) and the kernels alike: the 8 rows
// one ldmatrix phase reads, at the same logical chunk, land in 8 different 16-byte bank groups.
#pragma once

#if defined(__CUDACC__)
#define PB_HOST_DEVICE __host__ __device__
#else
#define PB_HOST_DEVICE
#endif

namespace parbench {

// Where logical chunk `chunk` of row `row` lies in a tile of kChunks chunks per row: the chunk index XOR the
// row's place among the rows that share 128 bytes of banks (8 / kChunks rows per 128 bytes below 8 chunks).
template <int kChunks>
PB_HOST_DEVICE constexpr int swizzle_chunk(int row, int chunk) {
  static_assert(kChunks >= 2 && (kChunks & (kChunks - 1)) == 0, "swizzled rows are a power of two of 16-byte chunks");
  constexpr int rows_per_line = kChunks >= 8 ? 1 : 8 / kChunks;
  constexpr int span = kChunks >= 8 ? 8 : kChunks;
  return chunk ^ ((row / rows_per_line) % span);
}
// Element offset of (row, col) in a swizzled tile of 16-bit elements with kCols columns (8 per chunk).
template <int kCols>
PB_HOST_DEVICE constexpr int swizzle_b16(int row, int col) {
  return row * kCols + swizzle_chunk<kCols / 8>(row, col / 8) * 8 + col % 8;
}

}  // namespace parbench
