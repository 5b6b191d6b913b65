// bench_links' parts and the program: the pair rounds (every pair once, each round disjoint, O(n) rounds), the
// analysis on planted matrices (a slow rank, a slow pair, a slow node link, noise alone, the two kinds of pair
// judged apart), and the program with a rank slowed by PARBENCH_FAULT kind slow: that rank named, no other, in
// threads and under mpirun, at 4 and 8 ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "benchmarks/links/link_analysis.h"
#include "benchmarks/links/pair_rounds.h"
#include "programs.h"

namespace {

using namespace parbench::links;
using ::testing::HasSubstr;
using ::testing::Not;
using pbtest::bin;
using pbtest::Finished;
using pbtest::run;

TEST(PairRounds, EveryPairOnceInDisjointRounds) {
  for (int n = 1; n <= 17; ++n) {
    const auto rounds = pair_rounds(n);
    EXPECT_EQ(int(rounds.size()), n < 2 ? 0 : (n % 2 ? n : n - 1)) << n;
    std::set<RankPair> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const RankPair& p : round) {
        EXPECT_LT(p.first, p.second) << n;
        EXPECT_GE(p.first, 0);
        EXPECT_LT(p.second, n);
        EXPECT_TRUE(busy.insert(p.first).second && busy.insert(p.second).second) << "rank twice in a round, n " << n;
        EXPECT_TRUE(seen.insert(p).second) << "pair twice, n " << n;
      }
      EXPECT_EQ(int(round.size()), n / 2) << n;  // every rank busy (but one, for odd n)
    }
    EXPECT_EQ(int(seen.size()), n * (n - 1) / 2) << n;
  }
}

// n ranks, `per_node` to a node: latency 10 us inside a node and 100 across, bandwidth 10 and 1 GB/s, each
// value off by up to `noise` (a fraction) at random.
struct Planted {
  LinkMatrix m;
  std::vector<int> node_of;
  Planted(int n, int per_node, double noise, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
    m.n = n;
    m.latency_us.assign(std::size_t(n) * n, 0);
    m.gbps.assign(std::size_t(n) * n, 0);
    for (int r = 0; r < n; ++r) node_of.push_back(r / per_node);
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b) {
        const bool inside = node_of[std::size_t(a)] == node_of[std::size_t(b)];
        set(a, b, (inside ? 10 : 100) * jitter(gen), (inside ? 10 : 1) * jitter(gen));
      }
  }
  void set(int a, int b, double latency, double gbps) {
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      m.latency_us[std::size_t(x) * m.n + y] = latency;
      m.gbps[std::size_t(x) * m.n + y] = gbps;
    }
  }
  void slow_rank(int r, double latency_factor, double gbps_factor) {
    for (int p = 0; p < m.n; ++p)
      if (p != r) set(r, p, m.latency(r, p) * latency_factor, m.bandwidth(r, p) * gbps_factor);
  }
};

std::vector<int> ranks_of(const LinkFindings& f) {
  std::vector<int> out;
  for (const SlowRank& r : f.ranks) out.push_back(r.rank);
  return out;
}

TEST(LinkAnalysis, NoiseAloneNamesNothing) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const Planted p(8, 2, 0.3, seed);
    const LinkFindings f = find_slow_links(p.m, p.node_of, 2.0);
    EXPECT_TRUE(f.ranks.empty() && f.nodes.empty() && f.pairs.empty()) << "seed " << seed;
  }
}

TEST(LinkAnalysis, PlantedRankAloneIsNamed) {
  for (int n : {4, 5, 8}) {
    for (int r = 0; r < n; ++r) {
      Planted lat(n, n, 0.3, unsigned(r + 1));
      lat.slow_rank(r, 10, 1);
      LinkFindings f = find_slow_links(lat.m, lat.node_of, 2.0);
      EXPECT_EQ(ranks_of(f), std::vector<int>{r}) << n << " ranks, latency";
      EXPECT_THAT(f.ranks.at(0).why, HasSubstr("or more on all its " + std::to_string(n - 1) + " pair(s)"));
      EXPECT_THAT(f.ranks.at(0).why, HasSubstr("inside a node"));
      EXPECT_TRUE(f.pairs.empty()) << "a slow rank's pairs are not named apart";
      EXPECT_TRUE(f.nodes.empty()) << "its node has other ranks";
      Planted bw(n, n, 0.3, unsigned(r + 7));
      bw.slow_rank(r, 1, 0.2);
      f = find_slow_links(bw.m, bw.node_of, 2.0);
      EXPECT_EQ(ranks_of(f), std::vector<int>{r}) << n << " ranks, bandwidth";
      EXPECT_THAT(f.ranks.at(0).why, HasSubstr("GB/s or less on all its"));
    }
  }
}

TEST(LinkAnalysis, SlowPairOfFastRanksIsNamedAsAPair) {
  Planted p(6, 6, 0.2, 3);
  p.set(1, 4, 80, 10);
  const LinkFindings f = find_slow_links(p.m, p.node_of, 2.0);
  EXPECT_TRUE(f.ranks.empty());
  ASSERT_EQ(f.pairs.size(), 1u);
  EXPECT_EQ(f.pairs[0].a, 1);
  EXPECT_EQ(f.pairs[0].b, 4);
  EXPECT_THAT(f.pairs[0].why, HasSubstr("latency 80 us inside a node"));
}

// Four nodes of one rank each, node 2's link throttled: its rank's pairs are all slow, the others' one in three.
TEST(LinkAnalysis, ThrottledNodeLinkNamesTheNode) {
  Planted p(4, 1, 0.2, 5);
  p.slow_rank(2, 1, 0.1);
  const LinkFindings f = find_slow_links(p.m, p.node_of, 2.0);
  EXPECT_EQ(ranks_of(f), std::vector<int>{2});
  EXPECT_EQ(f.nodes, std::vector<int>{2});
  EXPECT_THAT(f.ranks.at(0).why, HasSubstr("across nodes"));
}

TEST(LinkAnalysis, JudgedByOneMeasureOnly) {
  Planted p(6, 6, 0.2, 11);
  p.slow_rank(4, 10, 1);  // latency only
  EXPECT_EQ(ranks_of(find_slow_links(p.m, p.node_of, 2.0, {.latency = true, .bandwidth = false})), std::vector<int>{4});
  EXPECT_TRUE(find_slow_links(p.m, p.node_of, 2.0, {.latency = false, .bandwidth = true}).ranks.empty());
}

// Pairs across nodes are 10x slower than inside one by nature: each kind is judged against its own.
TEST(LinkAnalysis, KindsAreJudgedApart) {
  const Planted p(8, 4, 0.2, 9);
  EXPECT_TRUE(find_slow_links(p.m, p.node_of, 2.0).ranks.empty());
  EXPECT_THAT(slow_link_test(2.0), HasSubstr("latency over 2x the median of every rank's best of that kind"));
}

// The program: the rank that PARBENCH_FAULT slows is the one named, and no other.
std::string links(const std::string& launch, int planted) {
  return "PARBENCH_FAULT=rank:" + std::to_string(planted) + ",kind:slow,delay_us:3000 " + launch + bin("bench_links") +
         " -n 4 --passes 3 --bandwidth-size 64K --slow-factor 4 -T 60";  // 3 ms against tens of us
}

void expect_only(const Finished& r, int planted, int n) {
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("# Wrong bytes received : 0 OK"));
  EXPECT_THAT(r.output, HasSubstr("# slow rank: " + std::to_string(planted) + " on node 0")) << r.output;
  for (int other = 0; other < n; ++other) {
    if (other == planted) continue;
    EXPECT_THAT(r.output, Not(HasSubstr("# slow rank: " + std::to_string(other) + " "))) << r.output;
  }
}

TEST(BenchLinks, PlantedSlowRankIsNamedInThreads) {
  const int planted[][2] = {{4, 0}, {4, 3}, {8, 1}, {8, 5}, {8, 7}};  // 5 runs: ranks, the slow one
  for (const auto& [n, slow] : planted) {
    SCOPED_TRACE(std::to_string(n) + " ranks, rank " + std::to_string(slow) + " slow");
    expect_only(run(links("", slow) + " --ranks " + std::to_string(n)), slow, n);
  }
}

#ifdef PB_MPIEXEC
// Kept to idle cores (ctest -L quiet_machine runs it; scripts/test.sh leaves it out): processes that busy-poll MPI
// beside the other tests of a 2-core host lose the cores for whole probes, so that unplanted ranks can look 100x
// slow in bandwidth and 30x in latency against a median best of microseconds. With a 30 ms plant judged by latency
// it held in 10 of 10 runs beside four busy loops, but the margin there fell to 4.01x against the factor of 4.
TEST(BenchLinks, DISABLED_PlantedSlowRankIsNamedUnderMpirun) {
  const int planted[][2] = {{4, 2}, {4, 1}, {8, 0}, {8, 6}, {8, 3}};
  for (const auto& [n, slow] : planted) {
    SCOPED_TRACE(std::to_string(n) + " processes, rank " + std::to_string(slow) + " slow");
    // 30 ms late and judged by latency: a busy host's scheduling costs processes milliseconds, never tens.
    expect_only(run("PARBENCH_FAULT=rank:" + std::to_string(slow) + ",kind:slow,delay_us:30000 " + pbtest::mpirun(n) +
                    "-x PARBENCH_FAULT " + bin("bench_links") +
                    " -n 2 --passes 2 --bandwidth-size 64K --judge latency --slow-factor 4 -T 60"),
                slow, n);
  }
}
#endif

TEST(BenchLinks, CsvHasEveryPairAndBadInputExitsTwo) {
  const auto d = pbtest::fresh_dir("links");
  const std::string csv = (d / "pairs.csv").string();
  Finished r = run(bin("bench_links") + " --ranks 3 -n 2 --bandwidth-size 4K -q --csv " + csv);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "");  // -q
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "rank_a,rank_b,node_a,node_b,host_a,host_b,latency_us,gbps,wrong,finding");
  std::set<std::string> pairs;
  while (std::getline(in, line)) pairs.insert(line.substr(0, 3));
  EXPECT_EQ(pairs, (std::set<std::string>{"0,1", "0,2", "1,2"}));
  const struct {
    std::string args, message;
  } bad[] = {{"--ranks 1", "--ranks: 1 is not accepted"},
             {"", "--ranks N (N >= 2) or a launcher"},
             {"--ranks 2 --latency-size 1Q", "--latency-size"},
             {"--ranks 2 --slow-factor 1", "--slow-factor"},
             {"--ranks 2 --device cpu", "--device"},
             {"--ranks 2 --csv " + (d / "no" / "x.csv").string(), "does not exist"}};
  for (const auto& b : bad) {
    r = run(bin("bench_links") + " " + b.args);
    EXPECT_EQ(r.status, 2) << b.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(b.message)) << b.args;
  }
  EXPECT_FALSE(std::filesystem::exists(d / "no"));
  std::filesystem::remove_all(d);
}

}  // namespace
