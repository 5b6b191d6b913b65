// The table of collectives: one row per collective with every fact its users need (names, root, reduction,
// buffer shapes, where each output element comes from, bytes on the wire); collectives/README.md says how to add one.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "collectives/table/types.h"

namespace parbench {

// A buffer's element count on a rank for a call with per-rank `count` over n ranks (NCCL's convention).
enum class BufferSize {
  count,          // count on every rank
  count_at_root,  // count on the root, 0 elsewhere
  all,            // count x n on every rank
  all_at_root,    // count x n on the root, 0 elsewhere
  split_total,    // this rank's total of the alltoallv split of count x n (alltoallv_split.h)
};

// Where receive element i of a rank comes from (the data check computes expected outputs from it), with
// j = i % count and b = i / count.
enum class Source {
  reduced,     // every rank's input element, reduced with the call's op
  root,        // the root's input
  block,       // rank b's input
  left,        // rank (rank - 1 + n) % n's input
  split_peer,  // the alltoallv split's sender of element i, at its index for this rank (SourceIndex unused)
};
enum class SourceIndex {
  same,              // input element i
  own_block,         // input element rank x count + i
  block_offset,      // input element j
  own_block_offset,  // input element rank x count + j
};

// The algorithm family nccl-tests' bus bandwidth assumes, which fixes the message steps and the share of the size
// column's bytes S each rank sends over n ranks.
enum class Wire {
  ring_twice,  // around a ring twice (reduce-scatter, then all-gather): 2(n-1) steps, 2 S (n-1)/n
  ring,        // around a ring once, or n-1 messages of S/n: n-1 steps, S (n-1)/n
  tree,        // pipelined along a tree: ceil(log2 n) steps, S
  direct,      // one message: 1 step, S
  hypercube,   // pairwise exchanges with rank ^ 1, ^ 2, ^ 4, ...: log2 n steps, S (n-1)/n
};

struct CollectiveInfo {
  Collective id;
  std::string_view name;        // our name: bench_<name>, the CSV's collective column, messages
  std::string_view nccl_tests;  // nccl-tests' name: its program <nccl_tests>_perf
  bool rooted;                  // takes a root (--root)
  bool reduces;                 // takes a reduction op (-o)
  BufferSize send, recv;
  Source source;
  SourceIndex index;
  Wire wire;
};

// Every row, in the enum's order (row k describes Collective(k)).
std::span<const CollectiveInfo> collective_table();
const CollectiveInfo& collective_info(Collective c);
// The collective named `name` (CollectiveInfo::name); UsageError naming it and the accepted names otherwise.
Collective parse_collective(std::string_view name);
// The accepted names, comma-separated, for messages.
std::string collective_names();

// Bytes on the wire per rank for S = `bytes` over n ranks, by the collective's family (Wire): integer division as
// the traffic counters round, so 0 for a ring over one rank.
std::uint64_t wire_bytes(Collective c, std::uint64_t bytes, int n);
// The same share as a fraction of S: nccl-tests' busbw factor (busbw = algbw x fraction).
double wire_fraction(Collective c, int n);
// Message steps of the family (0 for one rank): what the alpha of an alpha-beta model multiplies.
double wire_steps(Collective c, int n);
// How many times a ring family goes around the ring (2, 1), 0 for the others (the hypercube too).
int ring_passes(Collective c);

}  // namespace parbench
