// bench_links: latency and bandwidth of every pair of ranks, in rounds of disjoint pairs (all pairs in O(n) rounds),
// printed as two matrices with the ranks, nodes and pairs that stand apart named (benchmarks/links/
// link_analysis.h says how). Every message is checked byte for byte. The host transports only: what links the
// ranks' hosts (shared memory inside a node, TCP or MPI across), where a multi-node run's trouble usually is.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "app/output.h"
#include "app/program.h"
#include "base/byte_pattern.h"
#include "base/clock.h"
#include "base/error.h"
#include "benchmarks/links/link_analysis.h"
#include "benchmarks/links/options.h"
#include "benchmarks/links/pair_rounds.h"
#include "collectives/bootstrap.h"
#include "collectives/communicator/communicator.h"
#include "collectives/launch/launcher.h"
#include "collectives/table/measurement.h"
#include "core/csv_columns.h"

using namespace parbench;
using namespace parbench::links;

namespace {

using Clock = std::chrono::steady_clock;

// A message from `sender` carries the pattern seeded by its rank: one from another rank differs.
void fill(std::vector<unsigned char>& v, int sender) { fill_pattern(v, std::uint64_t(sender)); }
std::int64_t count_wrong(const std::vector<unsigned char>& v, int sender) {
  return pattern_mismatches(v, std::uint64_t(sender));
}

std::string bytes_text(std::uint64_t bytes) { return std::to_string(bytes) + " B"; }

// Round trips per exchange of -n: a ping-pong costs little, and its best of many is what a busy host leaves of the
// link's latency.
constexpr int kLatencyRounds = 5;

// One rank's side of a pair: the leader (the lower rank) times; both count the wrong bytes they received.
struct PairResult {
  double latency_us = 0, gbps = 0;
  std::int64_t wrong = 0;
};

PairResult probe(Communicator& w, int peer, const Options& o, const Sizes& s) {
  const bool leader = w.rank() < peer;
  PairResult r;
  std::vector<unsigned char> small_out(s.latency), small_in(s.latency), big_out(s.bandwidth), big_in(s.bandwidth);
  fill(small_out, w.rank());
  fill(big_out, w.rank());
  double best = std::numeric_limits<double>::infinity();
  {
    MeasurementScope scope("the latency of ranks " + std::to_string(std::min(w.rank(), peer)) + " and " +
                           std::to_string(std::max(w.rank(), peer)) + " (" + bytes_text(s.latency) + " ping-pong)");
    for (int i = 0; i < o.warmup + kLatencyRounds * o.iters; ++i) {
      std::fill(small_in.begin(), small_in.end(), 0);
      const auto t0 = Clock::now();
      if (leader) w.send(small_out.data(), s.latency, peer), w.recv(small_in.data(), s.latency, peer);
      else w.recv(small_in.data(), s.latency, peer), w.send(small_out.data(), s.latency, peer);
      if (i >= o.warmup) best = std::min(best, seconds_since(t0) / 2);
      r.wrong += count_wrong(small_in, peer);
    }
  }
  r.latency_us = best * 1e6;
  best = std::numeric_limits<double>::infinity();
  {
    MeasurementScope scope("the bandwidth of ranks " + std::to_string(std::min(w.rank(), peer)) + " and " +
                           std::to_string(std::max(w.rank(), peer)) + " (" + bytes_text(s.bandwidth) +
                           " each way at once)");
    for (int i = 0; i < o.warmup + o.iters; ++i) {
      const P2POp ops[2] = {send_op(big_out.data(), s.bandwidth, peer), recv_op(big_in.data(), s.bandwidth, peer)};
      const auto t0 = Clock::now();
      w.group(ops);
      if (i >= o.warmup) best = std::min(best, seconds_since(t0));
    }
    r.wrong += count_wrong(big_in, peer);
  }
  r.gbps = best > 0 ? double(s.bandwidth) / best / 1e9 : 0;
  return r;
}

// Every rank's results, gathered to rank 0: per rank and peer, the leader's latency and bandwidth and the bytes
// the rank received wrong from that peer.
struct Gathered {
  LinkMatrix m;
  std::vector<std::int64_t> wrong;  // n x n: a received wrong from b, plus b from a
  std::vector<std::string> hosts;
};

Gathered run_pairs(Communicator& w, const Options& o, const Sizes& s) {
  const int n = w.size();
  std::vector<double> mine(3 * std::size_t(n), 0.0);  // latency, bandwidth, wrong per peer
  for (int pass = 0; pass < o.passes; ++pass)
    for (const auto& round : pair_rounds(n)) {
      for (const RankPair& p : round) {
        if (p.first != w.rank() && p.second != w.rank()) continue;
        const int peer = p.first == w.rank() ? p.second : p.first;
        const PairResult r = probe(w, peer, o, s);
        double* at = &mine[3 * std::size_t(peer)];
        at[0] = pass == 0 ? r.latency_us : std::min(at[0], r.latency_us);
        at[1] = std::max(at[1], r.gbps);
        at[2] += double(r.wrong);
      }
      w.barrier();  // the next round's pairs start together
    }
  std::vector<double> all(w.rank() == 0 ? 3 * std::size_t(n) * n : 0);
  w.gather(mine.data(), all.data(), 3 * std::size_t(n), DType::f64, 0);
  char host[64] = {};
  std::strncpy(host, host_name().c_str(), sizeof host - 1);
  std::vector<char> hosts(w.rank() == 0 ? sizeof host * n : 0);
  w.gather(host, hosts.data(), sizeof host, DType::u8, 0);
  Gathered g;
  if (w.rank() != 0) return g;
  g.m.n = n;
  g.m.latency_us.assign(std::size_t(n) * n, 0);
  g.m.gbps.assign(std::size_t(n) * n, 0);
  g.wrong.assign(std::size_t(n) * n, 0);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const int leader = std::min(a, b), other = std::max(a, b);
      const std::size_t at = 3 * (std::size_t(leader) * n + other), ab = std::size_t(a) * n + b;
      g.m.latency_us[ab] = all[at], g.m.gbps[ab] = all[at + 1];
      g.wrong[ab] = std::int64_t(all[3 * (std::size_t(a) * n + b) + 2] + all[3 * (std::size_t(b) * n + a) + 2]);
    }
  for (int r = 0; r < n; ++r) g.hosts.emplace_back(&hosts[sizeof host * std::size_t(r)]);
  return g;
}

void print_matrix(const char* title, const LinkMatrix& m, bool latency) {
  std::printf("#\n# %s\n#  rank", title);
  for (int b = 0; b < m.n; ++b) std::printf(" %9d", b);
  std::printf("\n");
  for (int a = 0; a < m.n; ++a) {
    std::printf("#  %4d", a);
    for (int b = 0; b < m.n; ++b)
      if (a == b) std::printf(" %9s", "-");
      else std::printf(" %9.3g", latency ? m.latency(a, b) : m.bandwidth(a, b));
    std::printf("\n");
  }
}

std::string node_text(int node, const Gathered& g, const std::vector<int>& node_of) {
  for (int r = 0; r < g.m.n; ++r)
    if (node_of[std::size_t(r)] == node) return "node " + std::to_string(node) + " (" + g.hosts[std::size_t(r)] + ")";
  return "node " + std::to_string(node);
}

void print_findings(const LinkFindings& f, const Gathered& g, const std::vector<int>& node_of, double factor,
                    const std::string& judge) {
  std::printf("#\n");
  if (f.ranks.empty()) std::printf("# slow ranks: none\n");
  for (const SlowRank& r : f.ranks)
    std::printf("# slow rank: %d on %s: %s\n", r.rank, node_text(node_of[std::size_t(r.rank)], g, node_of).c_str(),
                r.why.c_str());
  if (f.nodes.empty()) std::printf("# slow nodes: none\n");
  for (int node : f.nodes) std::printf("# slow node: %s: all its ranks are slow\n", node_text(node, g, node_of).c_str());
  if (f.pairs.empty()) std::printf("# slow pairs (neither rank slow): none\n");
  for (const SlowPair& p : f.pairs)
    std::printf("# slow pair: ranks %d and %d (%s, %s): %s\n", p.a, p.b,
                node_text(node_of[std::size_t(p.a)], g, node_of).c_str(),
                node_text(node_of[std::size_t(p.b)], g, node_of).c_str(), p.why.c_str());
  std::printf("# test: %s\n", slow_link_test(factor).c_str());
  if (judge != "both") std::printf("# judged by %s only (--judge)\n", judge.c_str());
}

// A pair's finding for the CSV: "rank R" when one of its ranks is slow, "pair" when the pair alone is, else "".
std::string pair_finding(const LinkFindings& f, int a, int b) {
  for (const SlowRank& r : f.ranks)
    if (r.rank == a || r.rank == b) return "rank " + std::to_string(r.rank);
  for (const SlowPair& p : f.pairs)
    if (p.a == a && p.b == b) return "pair";
  return {};
}

int report(Communicator& w, const Options& o, const Sizes& s, const Gathered& g, StreamingTable* rows) {
  const int n = g.m.n;
  std::vector<int> node_of(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) node_of[std::size_t(r)] = w.node_of(r);
  const LinkFindings f = find_slow_links(g.m, node_of, o.slow_factor, {o.judge != "bandwidth", o.judge != "latency"});
  std::int64_t wrong = 0;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      wrong += g.wrong[std::size_t(a) * n + b];
      if (rows)
        rows->add_row({std::int64_t(a), std::int64_t(b), std::int64_t(node_of[std::size_t(a)]),
                       std::int64_t(node_of[std::size_t(b)]), g.hosts[std::size_t(a)], g.hosts[std::size_t(b)],
                       g.m.latency(a, b), g.m.bandwidth(a, b), g.wrong[std::size_t(a) * n + b], pair_finding(f, a, b)});
    }
  if (!o.common.quiet) {
    const std::size_t rounds = pair_rounds(n).size();
    std::printf("# bench_links: %s\n", world_summary(w, w.nodes(), w.device()).c_str());
    std::printf("# %d pairs in %zu rounds of disjoint pairs, %d pass(es); latency: half the best round trip of %d "
                "(%s ping-pong); bandwidth: %s each way at once, the best of %d\n",
                n * (n - 1) / 2, rounds, o.passes, kLatencyRounds * o.iters * o.passes, bytes_text(s.latency).c_str(),
                bytes_text(s.bandwidth).c_str(), o.iters * o.passes);
    print_matrix("latency (us)", g.m, true);
    print_matrix("bandwidth (GB/s, each way)", g.m, false);
    std::printf("#\n# Wrong bytes received : %lld %s\n", (long long)wrong, wrong ? "FAILED" : "OK");
    print_findings(f, g, node_of, o.slow_factor, o.judge);
  }
  if (wrong) std::fprintf(stderr, "bench_links: %lld byte(s) received wrong\n", (long long)wrong);
  return wrong ? 1 : 0;
}

// `saved`: under a launcher, the other ranks' std::cerr, silenced until the options passed their checks, so that a
// usage error is printed once (by rank 0).
int run(const Options& o, std::streambuf* saved) {
  const Sizes s = checked_sizes(o);
  check_output_paths({{"--csv", o.common.csv}, {"--json", o.common.json}});
  if (saved) std::cerr.rdbuf(saved), std::cerr.clear();
  if (!launched_as_processes() && o.ranks < 2)
    throw UsageError("--ranks N (N >= 2) or a launcher (mpirun, torchrun, srun): a pair needs two ranks");
  LaunchOptions lo;
  lo.ranks = o.ranks;
  lo.timeout_s = o.timeout > 0 ? o.timeout : 300;
  int status = 0;
  run_ranks(lo, [&](Communicator& w) {
    if (w.size() < 2) throw UsageError("bench_links needs at least 2 ranks; the launch has " + std::to_string(w.size()));
    const Gathered g = run_pairs(w, o, s);
    if (w.rank() != 0) return;
    std::optional<StreamingTable> rows;  // rank 0's, written once every pair is measured
    if (!o.common.csv.empty() || !o.common.json.empty())
      rows.emplace(columns_of(csv::links::header), o.common.csv, o.common.json);
    status = report(w, o, s, g, rows ? &*rows : nullptr);
  });
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::streambuf* saved = launcher_world_rank() != 0 ? std::cerr.rdbuf(nullptr) : nullptr;
  return run_program({"Latency and bandwidth of every pair of ranks; the slow ranks, nodes and pairs named",
                      "bench_links"},
                     [&](CLI::App& app) { add_options(app, o); }, argc, argv,
                     [&](const CLI::App&) { return run(o, saved); });
}
