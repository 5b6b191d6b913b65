// hier, the topology-aware implementation, on rank threads given node maps as a launcher would report them:
// every op and a few dtypes against the data check on several shapes (contiguous, interleaved and scattered
// nodes, one rank per node, a split communicator; one on the simt device), the refusal of uneven nodes, and the
// bytes that cross nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "collectives/bootstrap.h"
#include "collectives/datacheck.h"
#include "collectives/registry.h"

namespace parbench {
namespace {

using ::testing::HasSubstr;

const Algorithm& hier() { return find_algorithm("hier"); }

// Rank r's place on its node of `map` and the node's rank count, as set_local takes them.
int local_rank_in(const std::vector<int>& map, int r) {
  return int(std::count(map.begin(), map.begin() + r, map[std::size_t(r)]));
}
int local_size_in(const std::vector<int>& map, int r) {
  return int(std::count(map.begin(), map.end(), map[std::size_t(r)]));
}
void place(Communicator& comm, const std::vector<int>& map) {
  comm.set_local(local_rank_in(map, comm.rank()), local_size_in(map, comm.rank()), map);
}

// Runs `c` on every dtype of `dtypes`, every op (reductions), in and out of place, every count and every root
// (broadcast); returns this rank's failures.
std::vector<std::string> check_collective(Communicator& comm, Collective c, const std::vector<DType>& dtypes,
                                          std::uint64_t seed0) {
  std::vector<std::string> failures;
  const std::vector<ReduceOp> ops = is_reduction(c) ? all_reduce_ops() : std::vector<ReduceOp>{ReduceOp::sum};
  const int roots = is_rooted(c) ? comm.size() : 1;
  for (DType t : dtypes)
    for (ReduceOp op : ops)
      for (int root = 0; root < roots; ++root)
        for (bool in_place : {false, true})
          for (std::size_t count : {0, 1, 7, 1000, 4099}) {
            CollectiveBuffers b(comm, c, count, t, op, root, in_place);
            const std::uint64_t seed = seed0 + count * 7919 + std::uint64_t(t) * 131 + std::uint64_t(op) * 17;
            b.fill(seed);
            comm.run(b.args(), hier());
            if (std::size_t wrong = b.wrong(seed))
              failures.push_back(std::string(collective_name(c)) + " " + std::string(dtype_name(t)) + " " +
                                 std::string(reduce_op_name(op)) + (in_place ? " in-place" : " out-of-place") +
                                 " count " + std::to_string(count) + " root " + std::to_string(root) + ": rank " +
                                 std::to_string(comm.rank()) + " has " + std::to_string(wrong) +
                                 " wrong elements (seed " + std::to_string(seed) + ")");
          }
  return failures;
}

struct MapCase {
  std::string name;
  std::vector<int> map;  // node of each world rank
  int split = 0;         // > 0: run on the sub-group of ranks r % split == 0 instead of the world
  DeviceKind device = DeviceKind::cpu;  // simt: buffers, scratch and combines in the emulated GPU's memory
};

void PrintTo(const MapCase& c, std::ostream* os) { *os << c.name; }

class HierAlgorithmMaps : public ::testing::TestWithParam<MapCase> {};

TEST_P(HierAlgorithmMaps, EveryOpAndDtypeExact) {
  const MapCase& p = GetParam();
  const std::uint64_t seed = std::random_device{}();
  std::mutex mu;
  std::vector<std::string> failures;
  LaunchOptions o;
  o.ranks = int(p.map.size());
  o.timeout_s = 60;
  o.device = Device{p.device, 0};
  run_ranks(o, [&](Communicator& world) {
    place(world, p.map);
    std::optional<Communicator> sub;
    if (p.split > 0) sub.emplace(world.split(world.rank() % p.split == 0 ? 0 : 1, world.rank()));
    if (sub && world.rank() % p.split != 0) return;
    Communicator& comm = sub ? *sub : world;
    std::vector<std::string> mine;
    for (Collective c : {Collective::allreduce, Collective::broadcast, Collective::allgather}) {
      auto f = check_collective(comm, c, {DType::f64, DType::bf16, DType::u8}, seed);  // 8, 2 and 1 bytes
      mine.insert(mine.end(), f.begin(), f.end());
    }
    std::lock_guard lock(mu);
    failures.insert(failures.end(), mine.begin(), mine.end());
  });
  for (const auto& f : failures) ADD_FAILURE() << p.name << ": " << f;
}

INSTANTIATE_TEST_SUITE_P(
    Threads, HierAlgorithmMaps,
    ::testing::Values(MapCase{"two_nodes_of_4", {0, 0, 0, 0, 1, 1, 1, 1}},
                      MapCase{"four_nodes_of_2", {0, 0, 1, 1, 2, 2, 3, 3}},
                      MapCase{"three_nodes_of_2", {0, 0, 1, 1, 2, 2}},
                      MapCase{"interleaved_two_nodes", {0, 1, 0, 1, 0, 1, 0, 1}},
                      MapCase{"scattered_four_nodes", {0, 1, 2, 2, 3, 1, 0, 3}},
                      MapCase{"three_interleaved_of_2", {0, 1, 2, 0, 1, 2}},
                      MapCase{"one_rank_per_node", {0, 1, 2, 3, 4}},
                      // ranks 0 2 4 6 of the world: nodes 0 0 1 1 by their world ranks
                      MapCase{"split_of_two_nodes", {0, 0, 0, 0, 1, 1, 1, 1}, 2},
                      MapCase{"simt_three_interleaved_of_2", {0, 1, 2, 0, 1, 2}, 0, DeviceKind::simt}),
    [](const ::testing::TestParamInfo<MapCase>& i) { return i.param.name; });

TEST(HierAlgorithm, RefusesUnevenNodesAndOtherCollectivesNamingWhy) {
  std::mutex mu;
  std::vector<std::string> errors;
  LaunchOptions o;
  o.ranks = 4;
  o.timeout_s = 20;
  run_ranks(o, [&](Communicator& comm) {
    auto expect = [&](bool ok, const std::string& what) {
      if (ok) return;
      std::lock_guard lock(mu);
      errors.push_back("rank " + std::to_string(comm.rank()) + ": " + what);
    };
    const std::string uneven = "hier needs the same number of ranks on every node; node 0 has 3, node 1 has 1";
    expect(hier().unsupported(Collective::reduce, comm) == "hier implements allreduce, broadcast and allgather",
           "reduce: " + hier().unsupported(Collective::reduce, comm));
    std::vector<float> buf(16, 1.0f);
    // Even first: runs (and the communicator remembers hier as vetted for allreduce).
    place(comm, {0, 0, 1, 1});
    comm.allreduce(buf.data(), buf.data(), 4, DType::f32, ReduceOp::sum, &hier());
    expect(buf[0] == 4.0f, "even allreduce gave " + std::to_string(buf[0]));
    place(comm, {0, 0, 1, 0});
    for (Collective c : {Collective::allreduce, Collective::broadcast, Collective::allgather}) {
      const std::string why = hier().unsupported(c, comm);
      expect(why == uneven, std::string(collective_name(c)) + ": " + why);
    }
    // A map changed after the vetting is refused by the run itself.
    try {
      comm.allreduce(buf.data(), buf.data(), 4, DType::f32, ReduceOp::sum, &hier());
      expect(false, "uneven allreduce ran");
    } catch (const UsageError& e) {
      expect(std::string(e.what()).find(uneven) != std::string::npos, e.what());
    }
    try {
      comm.broadcast(buf.data(), buf.data(), 4, DType::f32, 0, &hier());
      expect(false, "uneven broadcast ran");
    } catch (const UsageError& e) {
      expect(std::string(e.what()) == "hier cannot run broadcast: " + uneven, e.what());
    }
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

// A transport that counts the collective bytes this rank sends to ranks on other nodes of `map`.
class CountingTransport final : public Transport {
 public:
  CountingTransport(std::unique_ptr<Transport> inner, std::vector<int> map, std::atomic<std::size_t>& across)
      : inner_(std::move(inner)), map_(std::move(map)), across_(across) {}
  std::string_view name() const override { return inner_->name(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void group(std::span<const P2POp> ops, Deadline deadline) override {
    count(ops);
    inner_->group(ops, deadline);
  }
  void post_sends(std::span<const P2POp> ops) override {
    count(ops);
    inner_->post_sends(ops);
  }
  void finish_sends(Deadline deadline) override { inner_->finish_sends(deadline); }
  void abandon_sends() override { inner_->abandon_sends(); }
  std::unique_ptr<Transport> split(int color, int key, const std::vector<int>& members, int new_rank) override {
    return inner_->split(color, key, members, new_rank);
  }
  bool shares_address_space() const override { return inner_->shares_address_space(); }
  void abort(const std::string& reason) override { inner_->abort(reason); }
  bool aborted() const override { return inner_->aborted(); }

 private:
  void count(std::span<const P2POp> ops) {
    for (const P2POp& op : ops)
      if (op.kind == P2POp::send && op.tag == 1 && map_[std::size_t(op.peer)] != map_[std::size_t(rank())])
        across_ += op.bytes;
  }
  std::unique_ptr<Transport> inner_;
  std::vector<int> map_;
  std::atomic<std::size_t>& across_;
};

// Runs one collective with `impl` on rank threads placed by `map`, checks its data and returns the bytes each rank
// sent to other nodes.
std::vector<std::size_t> bytes_across(const std::vector<int>& map, Collective c, std::size_t count, int root,
                                      const Algorithm& impl) {
  const int n = int(map.size());
  auto world = make_threads_world(n);
  std::vector<std::atomic<std::size_t>> across(map.size());
  std::vector<std::string> errors(map.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        auto t = std::make_unique<CountingTransport>(make_threads_transport(world, r, Device{}), map,
                                                     across[std::size_t(r)]);
        Communicator comm(std::move(t), Device{}, 20, choose_automatically);
        place(comm, map);
        CollectiveBuffers b(comm, c, count, DType::f32, ReduceOp::sum, root, false);
        b.fill(77);
        comm.run(b.args(), impl);
        if (std::size_t wrong = b.wrong(77)) errors[std::size_t(r)] = std::to_string(wrong) + " wrong elements";
      } catch (const std::exception& e) {
        errors[std::size_t(r)] = e.what();
        abort_threads_world(*world, e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[std::size_t(r)], "") << "rank " << r;
  std::vector<std::size_t> out;
  for (auto& a : across) out.push_back(a.load());
  return out;
}

std::size_t total(const std::vector<std::size_t>& v) { return std::accumulate(v.begin(), v.end(), std::size_t(0)); }

// What the file's top comment claims: allreduce moves 2 (N-1) messages across nodes in all (2 (N-1)/N per node),
// broadcast N - 1 from the root, allgather each block N - 1 times; placed by the map, not by rank order.
TEST(HierAlgorithm, BytesAcrossNodesAreTheLeastThePhasesNeed) {
  const std::size_t count = 1001, bytes = count * sizeof(float);
  const std::vector<std::vector<int>> maps = {
      {0, 0, 0, 0, 1, 1, 1, 1}, {0, 1, 0, 1, 0, 1, 0, 1}, {0, 0, 1, 1, 2, 2}, {0, 1, 2, 2, 3, 1, 0, 3}, {0, 1, 2, 3}};
  for (const auto& map : maps) {
    const std::size_t n = map.size(), nodes = std::size_t(*std::max_element(map.begin(), map.end()) + 1);
    SCOPED_TRACE("map of " + std::to_string(n) + " ranks on " + std::to_string(nodes) + " nodes");
    EXPECT_EQ(total(bytes_across(map, Collective::allreduce, count, 0, hier())), 2 * (nodes - 1) * bytes);
    for (int root : {0, int(n) - 1}) {
      const auto b = bytes_across(map, Collective::broadcast, count, root, hier());
      EXPECT_EQ(b[std::size_t(root)], (nodes - 1) * bytes) << "root " << root;
      EXPECT_EQ(total(b), (nodes - 1) * bytes) << "root " << root;
    }
    for (std::size_t sent : bytes_across(map, Collective::allgather, count, 0, hier()))
      EXPECT_EQ(sent, (nodes - 1) * bytes);
  }
  // The counter sees what placement saves: a flat ring over interleaved nodes crosses at every step.
  const std::vector<int> interleaved = {0, 1, 0, 1, 0, 1, 0, 1};
  EXPECT_EQ(total(bytes_across(interleaved, Collective::allreduce, 1000, 0, find_algorithm("ring"))),
            2 * 7 * 1000 * sizeof(float));
}

}  // namespace
}  // namespace parbench
