// Alpha-beta models of ring, tree, recursive doubling, Rabenseifner and the hierarchical (intra-node, then
// inter-node) algorithms, and NCCL's per-step latency beyond two nodes; predict/README.md has the formulas.
#include "predict/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/table/collective_table.h"
#include "base/error.h"

namespace parbench::predict {

Link link_of(const NetLevel& l, double bytes) {
  return {l.latency_us * 1e-6, 1.0 / (l.gbps * 1e9 * l.efficiency.at(bytes))};
}

GroupPlacement place_group(const SystemModel& sys, int ranks, int stride) {
  const int node = sys.node_size();
  if (stride >= node) return {ranks, 1};
  return {ranks, std::max(1, std::min(ranks, node / stride))};
}

namespace {

// The link that limits a group: the innermost level when the group fits in a node; across nodes the outer
// level, whose per-GPU bandwidth the node's `per_node` NICs add up (NCCL runs a channel per NIC).
Link slowest_link(const SystemModel& sys, GroupPlacement g, double bytes) {
  const Link inner = link_of(sys.levels.front(), bytes);
  if (g.per_node >= g.ranks || sys.levels.size() == 1) return inner;
  const Link outer = link_of(sys.levels[1], bytes);
  return {outer.alpha, std::max(inner.beta, outer.beta / g.per_node)};
}

// Flat algorithms over n ranks whose slowest link is `k`, with the collective table's wire volume: reduce-scatter
// and all-gather move (n-1)/n of the buffer, an allreduce is both (two passes).
double ring(Collective c, double bytes, int n, Link k) {
  return wire_steps(c, n) * k.alpha + wire_fraction(c, n) * bytes * k.beta;
}
double recursive_doubling(Collective c, double bytes, int n, Link k) {
  const double steps = std::ceil(std::log2(double(n)));
  if (c == Collective::allreduce) return steps * (k.alpha + bytes * k.beta);
  return steps * k.alpha + wire_fraction(c, n) * bytes * k.beta;  // allgather: the data doubles each step
}
double rabenseifner(Collective c, double bytes, int n, Link k) {
  const double steps = std::ceil(std::log2(double(n)));
  return ring_passes(c) * steps * k.alpha + wire_fraction(c, n) * bytes * k.beta;
}
// NCCL's pipelined double binary tree: the whole buffer up and down once, latency of the tree's depth.
double tree(double bytes, int n, Link k) { return 2 * std::ceil(std::log2(double(n))) * k.alpha + 2 * bytes * k.beta; }

// Intra-node reduce-scatter, inter-node collective of the node's 1/per_node share on every NIC at once, intra-node
// all-gather.
double hierarchical(const SystemModel& sys, Collective op, double bytes, GroupPlacement g) {
  const Link inner = link_of(sys.levels.front(), bytes);
  const Link outer = link_of(sys.levels.size() > 1 ? sys.levels[1] : sys.levels[0], bytes);
  const int k = g.per_node, nodes = g.ranks / g.per_node;
  const double share = bytes / k;
  if (op == Collective::allreduce)
    return ring(Collective::allreduce, bytes, k, inner) +
           std::min(ring(Collective::allreduce, share, nodes, outer), tree(share, nodes, outer));
  return ring(op, bytes, k, inner) + ring(op, bytes / k, nodes, outer);  // allgather / reduce-scatter of the share
}

// The fixed cost of one collective: the innermost level's when the group fits in a node; across nodes the outer
// level's, plus the inner one's when several of the group's GPUs share a node (measured: 2 x 8 GPUs take about
// the 8-GPU time plus the 2 x 1 time).
double fixed_latency(const SystemModel& sys, GroupPlacement g) {
  const double inner = sys.levels.front().collective_latency_us * 1e-6;
  if (g.per_node >= g.ranks || sys.levels.size() == 1) return inner;
  return sys.levels[1].collective_latency_us * 1e-6 + (g.per_node > 1 ? inner : 0);
}

// NCCL's protocols as its tuning model costs them (NVIDIA/nccl src/graph/tuning.cc): a base latency per collective,
// a latency per ring step over NVLink and over the network (with one GPU per node, the tree's network latency), per
// tree level inside a node and over the network, and the bus bandwidth each reaches as a fraction of Simple's (ring,
// tree). Simple's ring steps are the system's `step_latency_us` (its NVLink step already at least three network posts
// across nodes); LL's bandwidth is also capped whatever the links, by the host CPU.
struct Protocol {
  double ring_base_us, tree_base_us, nvlink_ring_step_us, nvlink_tree_level_us, net_ring_step_us, net_tree_level_us;
  double ring_bandwidth, tree_bandwidth;
  bool ll_cap;       // LL's bandwidth cap applies
  bool posts_floor;  // an NVLink ring step across nodes takes at least one network post
};
constexpr Protocol kLL{6.6, 6.8, 0.6, 0.6, 2.7, 5.0, 0.5, 1 / 3.8, true, true};
constexpr Protocol kLL128{14.0, 14.0, 1.9, 1.25, 4.0, 8.5, 0.92, 120.0 / 128, false, true};

Protocol simple_protocol(const SystemModel& sys) {
  const double nvlink = sys.levels[0].step_latency_us, net = sys.levels[1].step_latency_us;
  return {8.4, 8.4, nvlink, 4.0, net, net, 1, 1, false, false};
}

std::vector<Protocol> protocols_of(const SystemModel& sys) {
  if (sys.collective_algorithms == CollectiveAlgorithms::every) return {simple_protocol(sys)};
  return {kLL, kLL128, simple_protocol(sys)};
}

// NCCL's cap on LL's bus bandwidth across nodes, GB/s: by host CPU, for two nodes and for more.
double ll_cap_bytes_per_s(const SystemModel& sys, int nodes) {
  const bool amd = sys.host_cpu == HostCpu::amd;
  return (nodes <= 2 ? (amd ? 22.5 : 39.0) : (amd ? 19.0 : 20.4)) * 1e9;
}

int nodes_of(GroupPlacement g) { return (g.ranks + g.per_node - 1) / g.per_node; }

// The time NCCL's model gives a ring or tree over the group `g` (whole nodes of g.per_node ranks) under protocol
// `p`, moving `wire` bytes per rank over links of `bus` bytes per second (the links' bandwidth as the model has it).
double protocol_seconds(const SystemModel& sys, const Protocol& p, bool tree, Collective op, GroupPlacement g,
                        double wire, double bus) {
  const int nodes = nodes_of(g);
  double bandwidth = bus * (tree ? p.tree_bandwidth : p.ring_bandwidth);
  if (p.ll_cap) bandwidth = std::min(bandwidth, ll_cap_bytes_per_s(sys, nodes));
  double latency_us = 0;
  if (tree) {
    latency_us = p.tree_base_us + 2 * ((g.per_node - 1) * p.nvlink_tree_level_us +
                                       std::ceil(std::log2(double(nodes))) * p.net_tree_level_us);
  } else {
    // Across nodes every NVLink step still posts to the network (Simple's system value already holds its three).
    const double post_us = nccl_net_post_us(sys.host_cpu);
    const double intra = p.posts_floor ? std::max(p.nvlink_ring_step_us, post_us) : p.nvlink_ring_step_us;
    const double inter = g.per_node == 1 ? p.net_tree_level_us : p.net_ring_step_us;
    const double steps = ring_passes(op) * double(g.ranks - 1);
    const double network_steps = ring_passes(op) * double(nodes - 1);
    latency_us = p.ring_base_us + (steps - network_steps) * intra + network_steps * inter;
  }
  return latency_us * 1e-6 + wire / bandwidth;
}

double best_protocol_seconds(const SystemModel& sys, bool tree, Collective op, GroupPlacement g, double wire,
                             double bus) {
  double best = std::numeric_limits<double>::infinity();
  for (const Protocol& p : protocols_of(sys)) best = std::min(best, protocol_seconds(sys, p, tree, op, g, wire, bus));
  return best;
}

// The curves and fixed latencies were measured on at most two nodes; what a ring or tree over more nodes adds is
// the difference NCCL's model gives between it and the same group on two nodes, each under the protocol the model
// picks (on a system whose collectives are not NCCL's: Simple's steps alone). Both on whole nodes, as the ring
// steps were counted.
double beyond_two_nodes(const SystemModel& sys, bool tree, Collective op, GroupPlacement g, double bytes, Link k) {
  if (sys.levels.size() < 2 || nodes_of(g) <= 2) return 0;
  const double wire = tree ? 2 * bytes : wire_fraction(op, g.ranks) * bytes, bus = 1 / k.beta;
  return best_protocol_seconds(sys, tree, op, {nodes_of(g) * g.per_node, g.per_node}, wire, bus) -
         best_protocol_seconds(sys, tree, op, {2 * g.per_node, g.per_node}, wire, bus);
}

}  // namespace

std::vector<CollCost> collective_costs(const SystemModel& sys, Collective op, double bytes, GroupPlacement g) {
  if (op != Collective::allreduce && op != Collective::allgather && op != Collective::reduce_scatter &&
      op != Collective::sendrecv)
    throw Error("the collective model has no cost for " + std::string(collective_name(op)));
  const int n = g.ranks;
  if (n <= 1) return {{"none", 0}};
  const Link k = slowest_link(sys, g, bytes);
  const double fixed = fixed_latency(sys, g);
  if (op == Collective::sendrecv) return {{"direct", fixed + k.alpha + bytes * k.beta}};
  std::vector<CollCost> out = {{"ring", ring(op, bytes, n, k) + beyond_two_nodes(sys, false, op, g, bytes, k)}};
  if (op == Collective::allreduce)
    out.push_back({"tree", tree(bytes, n, k) + beyond_two_nodes(sys, true, op, g, bytes, k)});
  if (sys.collective_algorithms == CollectiveAlgorithms::every) {
    if (op != Collective::reduce_scatter) out.push_back({"rd", recursive_doubling(op, bytes, n, k)});
    out.push_back({"rhd", rabenseifner(op, bytes, n, k)});
    if (g.per_node > 1 && g.per_node < n && n % g.per_node == 0)
      out.push_back({"hierarchical", hierarchical(sys, op, bytes, g)});
  }
  for (CollCost& c : out) c.seconds += fixed;
  return out;
}

CollCost collective_cost(const SystemModel& sys, Collective op, double bytes, GroupPlacement g) {
  const auto all = collective_costs(sys, op, bytes, g);
  return *std::min_element(all.begin(), all.end(), [](const CollCost& a, const CollCost& b) { return a.seconds < b.seconds; });
}

}  // namespace parbench::predict
