// Sizes of the two-pass column sums (kernels/column_sums.h), also needed by the ops' host halves, which allocate
// the first pass's fp32 partials: plain C++, no CUDA.
#pragma once
#include <algorithm>
#include <cstdint>

namespace parbench {

// The first pass splits the N rows into row blocks of at least kColumnRowsMin rows, at most kColumnRowBlocksMax
// of them (a couple per SM of a 132-SM GPU), each block summing every column over its rows.
inline constexpr int kColumnRowsMin = 32;
inline constexpr int kColumnRowBlocksMax = 264;

inline int column_rows_per_block(int N) {
  int blocks = std::clamp((N + kColumnRowsMin - 1) / kColumnRowsMin, 1, kColumnRowBlocksMax);
  return std::max((N + blocks - 1) / blocks, 1);
}
// Row blocks actually launched: every one holds at least one row.
inline int column_row_blocks(int N) {
  int rows = column_rows_per_block(N);
  return std::max((N + rows - 1) / rows, 1);
}
// fp32 elements of the partials of `sums` column sums of an (N, C) input.
inline std::int64_t column_partials_numel(int N, int C, int sums) {
  return std::int64_t(sums) * column_row_blocks(N) * C;
}

}  // namespace parbench
