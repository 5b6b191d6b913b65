// How alltoallv splits each rank's bytes among its peers, as nccl-tests' alltoallv_perf does: a distance-weighted
// split of a total (more bytes to ranks further away in rank order; NCCL_TESTS_ALLTOALLV_SPREAD blends it with the
// uniform split), or an explicit bytes matrix (NCCL_TESTS_ALLTOALLV_MATRIX_FILE, scaled by
// NCCL_TESTS_ALLTOALLV_MATRIX_SCALE). Every per-peer byte count is a multiple of 16.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"

namespace parbench {

struct AlltoallvPattern {
  double spread = 1.0;                // generated split: 0 uniform .. 1 fully distance-weighted
  std::vector<std::uint64_t> matrix;  // matrix split: dim x dim bytes, row i = what rank i sends to each rank
  int dim = 0;                        // 0: the generated split
  std::string file;                   // the matrix's file, for messages
  double scale = 1.0;
  bool from_matrix() const { return dim > 0; }
  // In words, for the program's header: "distance-weighted, spread 0.5" or "matrix m.txt (4x4) x 2".
  std::string describe() const;
};

// Each throws UsageError naming the variable, the value and the accepted form.
double parse_alltoallv_spread(std::string_view text);  // a number in [0, 1]
double parse_alltoallv_scale(std::string_view text);   // a finite number >= 0
// A whitespace-separated square matrix of non-negative integer byte counts, each a multiple of 16; the scaled
// values are rounded down to multiples of 16 (as nccl-tests does). `file` names it in messages.
AlltoallvPattern parse_alltoallv_matrix(std::string_view text, std::string_view file, double scale);
// From the environment now.
AlltoallvPattern alltoallv_pattern_from_env();
// From the environment, read once per process (what the buffer shapes, the data check and the implementations
// use, so that every rank of a process and every process of a job split alike).
const AlltoallvPattern& alltoallv_pattern();

// Bytes rank `from` sends to rank `to` of n when each rank's total is `total_bytes` (the generated split; the
// matrix ignores it): 16-byte multiples, nothing to itself at spread 1, every rank sending and receiving the same
// total.
std::uint64_t alltoallv_peer_bytes(const AlltoallvPattern& p, int from, int to, int n, std::uint64_t total_bytes);
// nccl-tests' count for a size column of `elems` elements: the per-peer count, rounded down to 16 bytes (0 for a
// matrix, which fixes its own sizes). The total a rank splits is count x n elements.
std::size_t alltoallv_count(const AlltoallvPattern& p, std::size_t elems, DType t, int n);

// One rank's split of a call with per-peer `count`, in elements: what it sends to and receives from each peer,
// where in its buffers (packed in rank order), and the totals.
struct AlltoallvSplit {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
  std::size_t send_total = 0, recv_total = 0;
};
AlltoallvSplit alltoallv_split(const AlltoallvPattern& p, int rank, int n, std::size_t count, DType t);
// The largest send and receive totals over the n ranks (elements): nccl-tests' size column and bandwidth.
struct AlltoallvTotals {
  std::size_t send = 0, recv = 0;
};
AlltoallvTotals alltoallv_largest_totals(const AlltoallvPattern& p, int n, std::size_t count, DType t);
// Where receive element i of `rank` comes from: the sending rank and the index in its send buffer.
struct AlltoallvSource {
  int rank = 0;
  std::size_t index = 0;
};
AlltoallvSource alltoallv_source(const AlltoallvPattern& p, int rank, int n, std::size_t count, DType t,
                                 std::size_t i);
// A run's sizes against a matrix: it must have at least n rows, and the sizes (-b, -e) be one size no smaller than
// the largest total (nccl-tests' rule). UsageError otherwise; nothing to check for the generated split.
void check_alltoallv_run(const AlltoallvPattern& p, const std::vector<std::uint64_t>& sizes, int n);

}  // namespace parbench
