// See outliers.h.
#include "outliers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "collectives/registry.h"
#include "core/stats.h"

namespace parbench {

std::vector<RankOutlier> own_time_outliers(const std::vector<double>& own_s, double op_s) {
  std::vector<RankOutlier> out;
  if (own_s.size() < 3) return out;  // two ranks: neither stands apart from the other
  const double m = median(own_s);
  std::vector<double> deviation;
  for (double x : own_s) deviation.push_back(std::fabs(x - m));
  const double mad = median(deviation);
  for (std::size_t r = 0; r < own_s.size(); ++r) {
    const double x = own_s[r];
    const double z = mad > 0 ? 0.6745 * (x - m) / mad : (x > m ? std::numeric_limits<double>::infinity() : 0);
    if (z > 3.5 && x > 2 * m && x - m >= 0.1 * op_s) out.push_back({int(r), x, m > 0 ? x / m : 0, z});
  }
  return out;
}

std::string outlier_test_text() {
  return "own time outside the transport's waits; a rank stands apart when its modified z-score (0.6745 (x - "
         "median) / MAD) is over 3.5, its own time over 2x the ranks' median and the excess at least 10% of the "
         "operation's time";
}

std::vector<Cell> own_time_cells(const HalfResult& h) {
  const std::vector<double>& own = h.rank_own;
  if (own.empty()) return {Cell{}, Cell{}, Cell{}, Cell{}};
  const auto slowest = std::max_element(own.begin(), own.end());
  std::string ranks;
  for (const RankOutlier& o : own_time_outliers(own, h.t.time)) ranks += (ranks.empty() ? "" : " ") + std::to_string(o.rank);
  return {Cell{median(own) * 1e6}, Cell{*slowest * 1e6}, Cell{std::int64_t(slowest - own.begin())}, Cell{ranks}};
}

nlohmann::ordered_json own_time_json(const HalfResult& h) {
  nlohmann::ordered_json j, own = nlohmann::ordered_json::array(), apart = nlohmann::ordered_json::array();
  for (double s : h.rank_own) own.push_back(s * 1e6);
  for (const RankOutlier& o : own_time_outliers(h.rank_own, h.t.time)) apart.push_back(o.rank);
  j["own_us"] = own;
  j["outlier_ranks"] = apart;
  if (!h.per_iter.per_rank.empty()) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& times : h.per_iter.per_rank) {
      nlohmann::ordered_json row = nlohmann::ordered_json::array();
      for (double s : times) row.push_back(s * 1e6);
      all.push_back(row);
    }
    j["times_us"] = all;
  }
  return j;
}

std::vector<double> gather_own_times(Communicator& world, double own_s) {
  std::vector<double> all(world.rank() == 0 ? std::size_t(world.size()) : 0);
  world.gather(&own_s, all.data(), 1, DType::f64, 0, &find_algorithm("naive"));
  return all;
}

OutlierBlock::OutlierBlock(const Communicator& world, const std::vector<RankInfo>& ranks) {
  for (int r = 0; r < world.size(); ++r)
    where_.push_back("node " + std::to_string(world.node_of(r)) +
                     (std::size_t(r) < ranks.size() ? " (" + ranks[std::size_t(r)].host + ")" : ""));
}

void OutlierBlock::add(const RowResult& row) {
  for (int half = 0; half < 2; ++half) {
    if (!row.half[half].ran) continue;
    ++rows_;
    const std::vector<double>& own_s = row.half[half].rank_own;
    std::vector<RankOutlier> found = own_time_outliers(own_s, row.half[half].t.time);
    if (!found.empty()) lines_.push_back({row.bytes, half, std::move(found), median(own_s)});
  }
}

void OutlierBlock::print() const {
  std::printf("#\n#  outliers (%s): %s\n", outlier_test_text().c_str(),
              lines_.empty() ? ("none in " + std::to_string(rows_) + " row halves").c_str() : "");
  for (const Line& l : lines_)
    for (const RankOutlier& o : l.outliers)
      std::printf("#  outlier: rank %d on %s, size %llu %s: own time %.1f us per operation, %.3gx the ranks' "
                  "median %.1f us (z %.3g)\n",
                  o.rank, o.rank < int(where_.size()) ? where_[std::size_t(o.rank)].c_str() : "?",
                  (unsigned long long)l.bytes, l.half ? "in place" : "out of place", o.own_s * 1e6, o.ratio,
                  l.median_s * 1e6, o.z);
}

}  // namespace parbench
