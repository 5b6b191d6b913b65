// The rows of the collective table and the wire-volume rules every byte count and bus bandwidth derives from.
#include "collectives/table/collective_table.h"

#include <array>
#include <cmath>
#include <string>

#include "base/error.h"

namespace parbench {

namespace {

// collectives/table/collectives.cmake reads the names from these rows (one row a collective, `{Collective::id, "name"`
// on the row's first line); test_coll_table checks what it read.
constexpr auto make_table() {
  // Inside the function: unity builds put other sources' names (ring, tree, all, ...) beside this file's.
  using enum BufferSize;
  using enum Source;
  using enum SourceIndex;
  using enum Wire;
  return std::to_array<CollectiveInfo>({
    // id                        name             nccl-tests        rooted reduces send         recv
    //  source, index, wire
    {Collective::broadcast,      "broadcast",     "broadcast",      true,  false,  count,       count,
     root, same, tree},
    {Collective::reduce,         "reduce",        "reduce",         true,  true,   count,       count_at_root,
     reduced, same, tree},
    {Collective::allreduce,      "allreduce",     "all_reduce",     false, true,   count,       count,
     reduced, same, ring_twice},
    {Collective::gather,         "gather",        "gather",         true,  false,  count,       all_at_root,
     block, block_offset, ring},
    {Collective::allgather,      "allgather",     "all_gather",     false, false,  count,       all,
     block, block_offset, ring},
    {Collective::scatter,        "scatter",       "scatter",        true,  false,  all_at_root, count,
     root, own_block, ring},
    {Collective::reduce_scatter, "reducescatter", "reduce_scatter", false, true,   all,         count,
     reduced, own_block, ring},
    {Collective::alltoall,       "alltoall",      "alltoall",       false, false,  all,         all,
     block, own_block_offset, ring},
    {Collective::sendrecv,       "sendrecv",      "sendrecv",       false, false,  count,       count,
     left, same, direct},
    {Collective::alltoallv,      "alltoallv",     "alltoallv",      false, false,  split_total, split_total,
     split_peer, same, ring},
    {Collective::hypercube,      "hypercube",     "hypercube",      false, false,  count,       all,
     block, block_offset, hypercube},
  });
}
constexpr auto kTable = make_table();

constexpr bool rows_in_enum_order() {
  for (std::size_t k = 0; k < kTable.size(); ++k)
    if (kTable[k].id != Collective(k)) return false;
  return true;
}
static_assert(rows_in_enum_order(), "row k of the collective table must describe Collective(k)");

// The one place of the ring's volume: going `passes` times around a ring of n ranks, each rank sends
// passes x S (n-1)/n (in T's arithmetic: integer division for byte counters).
template <class T>
T ring_volume(int passes, T s, int n) {
  return T(passes) * s * T(n - 1) / T(n);
}

}  // namespace

std::span<const CollectiveInfo> collective_table() { return kTable; }

const CollectiveInfo& collective_info(Collective c) {
  const auto k = std::size_t(c);
  if (k >= kTable.size()) throw Error("collective " + std::to_string(k) + " is not in the collective table");
  return kTable[k];
}

std::string collective_names() {
  std::string out;
  for (const CollectiveInfo& row : kTable) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

Collective parse_collective(std::string_view name) {
  for (const CollectiveInfo& row : kTable)
    if (row.name == name) return row.id;
  throw UsageError("unknown collective '" + std::string(name) + "'; accepted: " + collective_names());
}

int ring_passes(Collective c) {
  switch (collective_info(c).wire) {
    case Wire::ring_twice: return 2;
    case Wire::ring: return 1;
    default: return 0;
  }
}

// The hypercube moves what one ring pass moves, in fewer, larger steps.
int volume_passes(Collective c) { return collective_info(c).wire == Wire::hypercube ? 1 : ring_passes(c); }

std::uint64_t wire_bytes(Collective c, std::uint64_t bytes, int n) {
  const int passes = volume_passes(c);
  return passes ? ring_volume<std::uint64_t>(passes, bytes, n) : bytes;
}

double wire_fraction(Collective c, int n) {
  const int passes = volume_passes(c);
  return passes ? ring_volume<double>(passes, 1.0, n) : 1.0;
}

double wire_steps(Collective c, int n) {
  if (n <= 1) return 0;
  if (const int passes = ring_passes(c)) return double(passes * (n - 1));
  const Wire w = collective_info(c).wire;
  return w == Wire::tree || w == Wire::hypercube ? std::ceil(std::log2(double(n))) : 1.0;
}

}  // namespace parbench
