// See link_analysis.h.
#include "benchmarks/links/link_analysis.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>

#include "core/stats.h"

namespace parbench::links {
namespace {

enum Kind { inside = 0, across = 1 };
constexpr std::array<const char*, 2> kKindName = {"inside a node", "across nodes"};

struct Reference {
  std::optional<double> latency, bandwidth;  // none where no rank has a pair of the kind
  const char* what = "";                     // "the ranks' median best", "the pairs' median"
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

class Judge {
 public:
  Judge(const LinkMatrix& m, const std::vector<int>& node_of, double factor, Judged judged)
      : m_(m), node_of_(node_of), factor_(factor), judged_(judged) {
    for (int k : {inside, across}) {
      std::vector<double> lat, bw, pair_lat, pair_bw;
      for (int r = 0; r < m_.n; ++r)
        if (pairs_of(r, Kind(k)) > 0) lat.push_back(best(r, Kind(k), true)), bw.push_back(best(r, Kind(k), false));
      for (int a = 0; a < m_.n; ++a)
        for (int b = a + 1; b < m_.n; ++b)
          if (kind(a, b) == k) pair_lat.push_back(m_.latency(a, b)), pair_bw.push_back(m_.bandwidth(a, b));
      if (!lat.empty()) rank_ref_[k] = {median(lat), median(bw), "the ranks' median best"};
      if (!pair_lat.empty()) pair_ref_[k] = {median(pair_lat), median(pair_bw), "the pairs' median"};
    }
  }

  Kind kind(int a, int b) const { return node_of_[std::size_t(a)] == node_of_[std::size_t(b)] ? inside : across; }

  // Why rank r is slow, or "".
  std::string rank_verdict(int r) const {
    for (int k : {inside, across}) {
      const int count = pairs_of(r, Kind(k));
      if (count == 0) continue;
      const Verdict v = verdict(best(r, Kind(k), true), best(r, Kind(k), false), rank_ref_[k]);
      if (!v.measure.empty())
        return v.measure + (v.latency ? " or more" : " or less") + " on all its " + std::to_string(count) +
               " pair(s) " + kKindName[std::size_t(k)] + ", " + v.against;
    }
    return {};
  }

  // Why the pair is slow, or "".
  std::string pair_verdict(int a, int b) const {
    const Verdict v = verdict(m_.latency(a, b), m_.bandwidth(a, b), pair_ref_[kind(a, b)]);
    return v.measure.empty() ? "" : v.measure + " " + kKindName[std::size_t(kind(a, b))] + ", " + v.against;
  }

 private:
  int pairs_of(int r, Kind k) const {
    int count = 0;
    for (int p = 0; p < m_.n; ++p) count += p != r && kind(r, p) == k;
    return count;
  }
  // Rank r's best pair of kind k: the lowest latency or the highest bandwidth.
  double best(int r, Kind k, bool latency) const {
    std::vector<double> v;
    for (int p = 0; p < m_.n; ++p)
      if (p != r && kind(r, p) == k) v.push_back(latency ? m_.latency(r, p) : m_.bandwidth(r, p));
    return latency ? *std::min_element(v.begin(), v.end()) : *std::max_element(v.begin(), v.end());
  }
  // What stands apart ("latency 1e+03 us") and against what ("450x the ranks' median best 2.23 us"); empty: nothing.
  struct Verdict {
    std::string measure, against;
    bool latency = false;  // the latency stands apart (else the bandwidth)
  };
  Verdict verdict(double latency, double bandwidth, const Reference& ref) const {
    if (judged_.latency && ref.latency && *ref.latency > 0 && latency > factor_ * *ref.latency)
      return {"latency " + number(latency) + " us",
              number(latency / *ref.latency) + "x " + ref.what + " " + number(*ref.latency) + " us", true};
    if (judged_.bandwidth && ref.bandwidth && bandwidth * factor_ < *ref.bandwidth)
      return {"bandwidth " + number(bandwidth) + " GB/s",
              number(bandwidth / *ref.bandwidth) + "x " + ref.what + " " + number(*ref.bandwidth) + " GB/s", false};
    return {};
  }

  const LinkMatrix& m_;
  const std::vector<int>& node_of_;
  double factor_;
  Judged judged_;
  std::array<Reference, 2> rank_ref_, pair_ref_;  // per kind: ranks are judged by their best pair, pairs by all
};

}  // namespace

LinkFindings find_slow_links(const LinkMatrix& m, const std::vector<int>& node_of, double factor, Judged judged) {
  const Judge judge(m, node_of, factor, judged);
  LinkFindings f;
  std::vector<bool> slow(std::size_t(m.n), false);
  for (int r = 0; r < m.n; ++r)
    if (std::string why = judge.rank_verdict(r); !why.empty()) f.ranks.push_back({r, why}), slow[std::size_t(r)] = true;
  const int nodes = node_of.empty() ? 0 : *std::max_element(node_of.begin(), node_of.end()) + 1;
  for (int node = 0; node < nodes && nodes > 1; ++node) {
    bool all = true;
    for (int r = 0; r < m.n; ++r) all = all && (node_of[std::size_t(r)] != node || slow[std::size_t(r)]);
    if (all) f.nodes.push_back(node);
  }
  for (int a = 0; a < m.n; ++a)
    for (int b = a + 1; b < m.n; ++b)
      if (!slow[std::size_t(a)] && !slow[std::size_t(b)])
        if (std::string why = judge.pair_verdict(a, b); !why.empty()) f.pairs.push_back({a, b, why});
  return f;
}

std::string slow_link_test(double factor) {
  return "a rank is slow when even its best pair of one kind (inside a node, across nodes) is: latency over " +
         number(factor) + "x the median of every rank's best of that kind, or bandwidth under 1/" + number(factor) +
         " of it; a pair when it is that far from the median of the pairs of its kind";
}

}  // namespace parbench::links
