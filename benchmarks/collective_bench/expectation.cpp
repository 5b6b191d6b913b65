#include "expectation.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

#include "base/error.h"
#include "predict/collective_model.h"

namespace parbench {

std::optional<std::string> modelled_algorithm(std::string_view impl) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kModels{{
      {"ring", "ring"}, {"ring-dev", "ring"}, {"rd", "rd"}, {"rd-dev", "rd"}, {"rhd", "rhd"}, {"rhd-dev", "rhd"},
      {"hier", "hierarchical"}, {"nccl", ""}, {"mpi", ""}, {"mpi-nb", ""}, {"nccl-lsa", ""}}};
  for (const auto& [name, model] : kModels)
    if (name == impl) return std::string(model);
  return std::nullopt;
}

Expectation::Expectation(const std::string& system) : sys_(predict::load_system(system, "--expect")) {}

namespace {

bool modelled_collective(Collective c) {
  return c == Collective::allreduce || c == Collective::allgather || c == Collective::reduce_scatter ||
         c == Collective::sendrecv;
}

// The launch's placement as the model takes it: ranks spread evenly, the fullest node's count per node.
predict::GroupPlacement placement(int ranks, int nodes) {
  const int n = std::max(1, nodes);
  return {ranks, (ranks + n - 1) / n};
}

}  // namespace

std::optional<double> Expectation::seconds(Collective c, std::string_view impl, double bytes, int ranks,
                                           int nodes) const {
  const std::optional<std::string> algorithm = modelled_algorithm(impl);
  if (!algorithm || !modelled_collective(c) || ranks < 2) return std::nullopt;
  const auto costs = predict::collective_costs(sys_, c, bytes, placement(ranks, nodes));
  if (algorithm->empty() || c == Collective::sendrecv)
    return std::min_element(costs.begin(), costs.end(), [](const auto& a, const auto& b) {
             return a.seconds < b.seconds;
           })->seconds;
  for (const predict::CollCost& cost : costs)
    if (cost.algorithm == *algorithm) return cost.seconds;
  return std::nullopt;  // e.g. hierarchical on one node, or rd for a reduce-scatter
}

std::string Expectation::basis(Collective c, std::string_view impl, int ranks, int nodes) const {
  const std::optional<std::string> algorithm = modelled_algorithm(impl);
  const std::string name(impl);
  if (!algorithm) return "no model of " + name + "'s algorithm";
  if (!modelled_collective(c)) return "no model of " + std::string(collective_name(c));
  if (ranks < 2) return "one rank";
  if (!seconds(c, impl, 1, ranks, nodes)) return "no model of " + *algorithm + " for this collective and placement";
  if (c == Collective::sendrecv) return "the alpha-beta model of one message";
  if (algorithm->empty()) return "the least of the alpha-beta models (" + name + " picks its own algorithm)";
  return "the alpha-beta model of " + *algorithm;
}

std::optional<double> ExpectedBlock::add(const RowResult& row, bool cputime) {
  Line line{row.bytes, e_.seconds(coll_, impl_, double(row.bytes), ranks_, nodes_), {0, 0}};
  for (int i = 0; i < 2; ++i)
    if (row.half[i].ran) line.measured[i] = cputime ? row.half[i].t.cpu_time : row.half[i].t.time;
  lines_.push_back(line);
  return line.expected;
}

void ExpectedBlock::print() const {
  std::printf("#\n#  expected on %s: %s\n", e_.system_name().c_str(), e_.basis(coll_, impl_, ranks_, nodes_).c_str());
  if (lines_.empty() || !lines_.front().expected) return;
  std::printf("#  %12s  %12s  %12s  %12s\n", "size", "expected", "out-of-place", "in-place");
  std::printf("#  %12s  %12s  %12s  %12s\n", "(B)", "(us)", "%expected", "%expected");
  auto share = [](const Line& l, int half) {
    return l.measured[half] > 0 && l.expected ? float_str(percent_of_expected(*l.expected, l.measured[half]), 12)
                                              : std::string(11, ' ') + "-";
  };
  for (const Line& l : lines_)
    std::printf("#  %12llu  %12s  %12s  %12s\n", (unsigned long long)l.bytes,
                l.expected ? float_str(*l.expected * 1e6, 12).c_str() : "-", share(l, 0).c_str(), share(l, 1).c_str());
}

}  // namespace parbench
