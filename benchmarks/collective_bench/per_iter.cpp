// See per_iter.h.
#include "per_iter.h"

#include <algorithm>

#include "collectives/registry.h"

namespace parbench {

PerIterResult fold_iteration_times(const std::vector<double>& all, int iters, int skip,
                                   const std::vector<RankInfo>& ranks) {
  PerIterResult out;
  out.present = true;
  out.skipped = skip;
  const auto n = std::size_t(iters);
  std::vector<std::string> processes;  // "host pid", in the order of their first rank
  std::vector<std::vector<double>> per_process;
  for (std::size_t r = 0; r < ranks.size() && (r + 1) * n <= all.size(); ++r) {
    const std::string key = ranks[r].host + " " + std::to_string(ranks[r].pid);
    const auto at = std::find(processes.begin(), processes.end(), key);
    const std::size_t p = std::size_t(at - processes.begin());
    if (at == processes.end()) processes.push_back(key), per_process.emplace_back(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) per_process[p][i] = std::max(per_process[p][i], all[r * n + i]);
  }
  out.times.assign(n, 0.0);
  for (const auto& row : per_process)
    for (std::size_t i = 0; i < n; ++i) out.times[i] = std::max(out.times[i], row[i]);
  const auto first = std::min<std::size_t>(std::size_t(std::max(skip, 0)), n);
  out.stats = iteration_stats(std::vector<double>(out.times.begin() + std::ptrdiff_t(first), out.times.end()));
  if (per_process.size() > 1) out.per_process = std::move(per_process);
  return out;
}

PerIterResult gather_iteration_times(Communicator& world, const std::vector<double>& mine, int iters, int skip,
                                     const std::vector<RankInfo>& ranks, bool keep_ranks) {
  std::vector<double> send(mine);
  send.resize(std::size_t(iters), 0.0);
  std::vector<double> all(send.size() * std::size_t(world.size()));
  world.gather(send.data(), all.data(), send.size(), DType::f64, 0, &find_algorithm("naive"));
  if (world.rank() != 0) return {};
  PerIterResult out = fold_iteration_times(all, iters, skip, ranks);
  if (keep_ranks)
    for (std::size_t r = 0; r < std::size_t(world.size()); ++r)
      out.per_rank.emplace_back(all.begin() + std::ptrdiff_t(r * send.size()),
                                all.begin() + std::ptrdiff_t((r + 1) * send.size()));
  return out;
}

}  // namespace parbench
