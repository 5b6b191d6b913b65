// Alpha-beta models of ring, tree, recursive doubling, Rabenseifner and the hierarchical (intra-node, then
// inter-node) algorithms, and NCCL's per-step latency beyond two nodes; predict/README.md has the formulas.
#include "predict/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/collective_table.h"
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

// NCCL's ring over `nodes` nodes with `per_node` of the group's ranks on each takes, per pass, nodes - 1 network
// steps and the rest NVLink steps; the curves and fixed latencies were measured on at most two nodes, so a ring pays
// for the steps it has beyond a two-node ring: each further node adds a network step and per_node - 1 NVLink steps.
int nodes_of(GroupPlacement g) { return (g.ranks + g.per_node - 1) / g.per_node; }
double ring_steps_beyond_two_nodes(const SystemModel& sys, Collective op, GroupPlacement g) {
  if (sys.levels.size() < 2 || nodes_of(g) <= 2) return 0;
  const double step = sys.levels[1].step_latency_us + (g.per_node - 1) * sys.levels[0].step_latency_us;
  return ring_passes(op) * (nodes_of(g) - 2) * step * 1e-6;
}
// NCCL's tree runs up and down a binary tree of the nodes, a network step per level: beyond two nodes' one level.
double tree_levels_beyond_two_nodes(const SystemModel& sys, GroupPlacement g) {
  if (sys.levels.size() < 2 || nodes_of(g) <= 2) return 0;
  return 2 * (std::ceil(std::log2(double(nodes_of(g)))) - 1) * sys.levels[1].step_latency_us * 1e-6;
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
  std::vector<CollCost> out = {{"ring", ring(op, bytes, n, k) + ring_steps_beyond_two_nodes(sys, op, g)}};
  if (op == Collective::allreduce)
    out.push_back({"tree", tree(bytes, n, k) + tree_levels_beyond_two_nodes(sys, g)});
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
