// The collective table: its names against the CMake list the programs and test lists come from, and the rules
// read from it (buffer shapes, in-place layout, wire bytes, busbw, data check sources) with known values per row.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/table/collective_table.h"
#include "collectives/datacheck.h"
#include "base/error.h"

namespace parbench {
namespace {

std::vector<std::string> cmake_list() {
  std::vector<std::string> names;
  std::stringstream in(PB_CMAKE_COLLECTIVES);
  for (std::string name; std::getline(in, name, ',');) names.push_back(name);
  return names;
}

TEST(CollectiveTable, MatchesTheCmakeListRowForRow) {
  const std::vector<std::string> cmake = cmake_list();
  ASSERT_EQ(cmake.size(), collective_table().size())
      << "collectives/table/collectives.cmake (" << PB_CMAKE_COLLECTIVES << ") and the table (" << collective_names()
      << ") differ";
  for (std::size_t k = 0; k < cmake.size(); ++k) {
    EXPECT_EQ(cmake[k], collective_table()[k].name) << "row " << k;
    EXPECT_EQ(collective_table()[k].id, Collective(k)) << "row " << k;
    EXPECT_EQ(parse_collective(cmake[k]), Collective(k));
  }
  EXPECT_EQ(all_collectives().size(), cmake.size());
}

TEST(CollectiveTable, NamesAreDistinct) {
  std::set<std::string_view> names, nccl;
  for (const CollectiveInfo& row : collective_table()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_TRUE(nccl.insert(row.nccl_tests).second) << row.nccl_tests;
  }
  EXPECT_EQ(collective_info(Collective::allreduce).nccl_tests, "all_reduce");
  EXPECT_EQ(collective_name(Collective::reduce_scatter), "reducescatter");
}

TEST(CollectiveTable, UnknownNameNamesItAndTheAccepted) {
  try {
    parse_collective("all_reduce");
    FAIL() << "accepted all_reduce";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'all_reduce'"), std::string::npos) << what;
    EXPECT_NE(what.find("accepted: " + std::string(collective_names())), std::string::npos) << what;
    EXPECT_NE(what.find("broadcast, reduce, allreduce"), std::string::npos) << what;
  }
}

// Per row at 4 ranks, count 5, rank 1 with root 2 (and the root itself), 400 bytes of f32: what NCCL's conventions
// and nccl-tests' algbw and busbw give (algbw = size column / time x algbw factor, busbw = algbw x busbw factor).
struct Known {
  BufferCounts rank1, root;
  std::size_t count_for_400_bytes, inplace_offset_rank1;
  double busbw;
  bool rooted, reduces;
  double algbw = 1.0;
};

TEST(CollectiveTable, ShapesAndBusbwOfEveryRow) {
  const std::map<Collective, Known> known = {
      {Collective::broadcast, {{5, 5}, {5, 5}, 100, 0, 1.0, true, false}},
      {Collective::reduce, {{5, 0}, {5, 5}, 100, 0, 1.0, true, true}},
      {Collective::allreduce, {{5, 5}, {5, 5}, 100, 0, 1.5, false, true}},
      {Collective::gather, {{5, 0}, {5, 20}, 25, 5, 0.75, true, false}},
      {Collective::allgather, {{5, 20}, {5, 20}, 25, 5, 0.75, false, false}},
      {Collective::scatter, {{0, 5}, {20, 5}, 25, 5, 0.75, true, false}},
      {Collective::reduce_scatter, {{20, 5}, {20, 5}, 25, 5, 0.75, false, true}},
      {Collective::alltoall, {{20, 20}, {20, 20}, 25, 0, 0.75, false, false}},
      {Collective::sendrecv, {{5, 5}, {5, 5}, 100, 0, 1.0, false, false}},
      // The default split (spread 1): 5 x 4 f32 = 80 bytes a rank, 80 d / 6 to the rank d ahead, rounded down to 16
      // bytes: 0, 0, 16 and 32 bytes (0, 0, 4, 8 elements) whatever the rank; 400 bytes are 25 per peer, rounded
      // down to 16 bytes: 24. Each rank sends and receives 12 elements.
      {Collective::alltoallv, {{12, 12}, {12, 12}, 24, 0, 0.75, false, false}},
      // allgather's shapes; 400 bytes: 100 / 4 = 25 per rank, rounded down to 4 elements (nccl-tests' hypercube):
      // 24; algbw counts the (n-1)/n that travels, busbw is algbw.
      {Collective::hypercube, {{5, 20}, {5, 20}, 24, 5, 1.0, false, false, 0.75}},
  };
  ASSERT_EQ(known.size(), collective_table().size());
  for (const CollectiveInfo& row : collective_table()) {
    const Known& k = known.at(row.id);
    const BufferCounts r1 = buffer_counts(row.id, 5, 4, 1, 2, DType::f32);
    const BufferCounts rt = buffer_counts(row.id, 5, 4, 2, 2, DType::f32);
    EXPECT_EQ(algbw_factor(row.id, 4), k.algbw) << row.name;
    EXPECT_EQ(r1.send, k.rank1.send) << row.name;
    EXPECT_EQ(r1.recv, k.rank1.recv) << row.name;
    EXPECT_EQ(rt.send, k.root.send) << row.name;
    EXPECT_EQ(rt.recv, k.root.recv) << row.name;
    EXPECT_EQ(count_for_bytes(row.id, 400, DType::f32, 4), k.count_for_400_bytes) << row.name;
    EXPECT_EQ(inplace_offset(row.id, 5, 1), k.inplace_offset_rank1) << row.name;
    EXPECT_EQ(busbw_factor(row.id, 4), k.busbw) << row.name;
    EXPECT_EQ(is_rooted(row.id), k.rooted) << row.name;
    EXPECT_EQ(is_reduction(row.id), k.reduces) << row.name;
  }
}

TEST(CollectiveTable, WireBytesRoundLikeTheCounters) {
  // 2 x 10 x 2 / 3 = 13.33 and 10 x 2 / 3 = 6.67, rounded down; trees and direct messages send S.
  EXPECT_EQ(wire_bytes(Collective::allreduce, 10, 3), 13u);
  EXPECT_EQ(wire_bytes(Collective::allgather, 10, 3), 6u);
  EXPECT_EQ(wire_bytes(Collective::reduce_scatter, 10, 3), 6u);
  EXPECT_EQ(wire_bytes(Collective::broadcast, 10, 3), 10u);
  EXPECT_EQ(wire_bytes(Collective::sendrecv, 10, 3), 10u);
  EXPECT_EQ(wire_bytes(Collective::allreduce, 10, 1), 0u);
  EXPECT_EQ(wire_bytes(Collective::alltoallv, 10, 3), 6u);
  EXPECT_EQ(wire_bytes(Collective::hypercube, 10, 3), 6u);  // one ring pass's volume in log2 n steps
  EXPECT_EQ(wire_fraction(Collective::allreduce, 8), 1.75);
  EXPECT_EQ(wire_fraction(Collective::allreduce, 1), 0.0);
}

TEST(CollectiveTable, MessageSteps) {
  EXPECT_EQ(wire_steps(Collective::allreduce, 4), 6);
  EXPECT_EQ(wire_steps(Collective::allgather, 4), 3);
  EXPECT_EQ(wire_steps(Collective::gather, 4), 3);
  EXPECT_EQ(wire_steps(Collective::broadcast, 5), 3);  // ceil(log2 5)
  EXPECT_EQ(wire_steps(Collective::reduce, 4), 2);
  EXPECT_EQ(wire_steps(Collective::sendrecv, 4), 1);
  EXPECT_EQ(wire_steps(Collective::alltoallv, 4), 3);
  EXPECT_EQ(wire_steps(Collective::hypercube, 8), 3);
  for (const CollectiveInfo& row : collective_table()) EXPECT_EQ(wire_steps(row.id, 1), 0) << row.name;
}

// The data check's expected outputs follow each row's source: at 3 ranks, count 2, rank 1, root 2.
TEST(CollectiveTable, DataCheckSourcesOfEveryRow) {
  const DType t = DType::f32;
  const ReduceOp op = ReduceOp::sum;
  auto in = [&](int rank, std::size_t i) { return datacheck::input_value(t, op, 3, 7, rank, i); };
  auto sum = [&](std::size_t i) { return in(0, i) + in(1, i) + in(2, i); };
  auto got = [&](Collective c, std::size_t i) { return datacheck::expected_value(c, t, op, 3, 2, 7, 1, 2, i).value; };
  EXPECT_EQ(got(Collective::broadcast, 1), in(2, 1));
  EXPECT_EQ(got(Collective::reduce, 1), sum(1));
  EXPECT_EQ(got(Collective::allreduce, 0), sum(0));
  EXPECT_EQ(got(Collective::gather, 5), in(2, 1));     // block 2, element 1
  EXPECT_EQ(got(Collective::allgather, 2), in(1, 0));  // block 1, element 0
  EXPECT_EQ(got(Collective::scatter, 1), in(2, 3));    // the root's block 1, element 1
  EXPECT_EQ(got(Collective::reduce_scatter, 1), sum(3));
  EXPECT_EQ(got(Collective::alltoall, 5), in(2, 3));  // from rank 2, its block for rank 1, element 1
  EXPECT_EQ(got(Collective::sendrecv, 1), in(0, 1));  // from the left neighbour
  EXPECT_EQ(got(Collective::hypercube, 2), in(1, 0));  // block 1, element 0
}

// alltoallv's source by the default split at 3 ranks, count 8 of f32 (96 bytes a rank): 96 d / 3 bytes to the rank
// d ahead, so 0, 32 and 64 bytes (0, 8, 16 elements) to the ranks 0, 1, 2 ahead. Rank 1 receives rank 0's 8
// elements for it (rank 0 sends 0 to itself, so they start at its index 0), then rank 2's 16 (rank 2 sends 8 to
// rank 0 first, so they start at its index 8).
TEST(CollectiveTable, DataCheckSourcesOfAlltoallv) {
  const DType t = DType::f32;
  auto in = [&](int rank, std::size_t i) { return datacheck::input_value(t, ReduceOp::sum, 3, 7, rank, i); };
  auto got = [&](std::size_t i) {
    return datacheck::expected_value(Collective::alltoallv, t, ReduceOp::sum, 3, 0, 7, 1, 8, i).value;
  };
  EXPECT_EQ(got(0), in(0, 0));
  EXPECT_EQ(got(7), in(0, 7));
  EXPECT_EQ(got(8), in(2, 8));
  EXPECT_EQ(got(23), in(2, 23));
  EXPECT_EQ(buffer_counts(Collective::alltoallv, 8, 3, 1, 0, t).recv, 24u);
}

TEST(CollectiveTable, HypercubeNeedsAPowerOfTwo) {
  for (int n : {1, 2, 4, 8, 16}) EXPECT_EQ(ranks_refusal(Collective::hypercube, n), "") << n;
  for (int n : {3, 5, 6, 12}) {
    const std::string why = ranks_refusal(Collective::hypercube, n);
    EXPECT_NE(why.find("power-of-two"), std::string::npos) << why;
    EXPECT_NE(why.find("not " + std::to_string(n)), std::string::npos) << why;
  }
  for (const CollectiveInfo& row : collective_table()) {
    if (row.id != Collective::hypercube) {
      EXPECT_EQ(ranks_refusal(row.id, 3), "") << row.name;
    }
  }
}

}  // namespace
}  // namespace parbench
