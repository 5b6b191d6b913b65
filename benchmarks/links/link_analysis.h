// Which ranks, nodes and pairs of a link probe stand apart. Pairs are of two kinds, inside a node and across nodes,
// each judged only against its own kind. A rank is slow when even its best pair of a kind is: its lowest latency
// over its pairs of that kind is more than `factor` times the median of every rank's lowest (or its highest
// bandwidth less than 1/factor of the median of every rank's highest). A slow rank or node link slows every one
// of its pairs, while noise on a busy host slows some pairs of many ranks; the best pair ignores the latter. A
// node is slow when all its ranks are (and there is another node to compare with); a pair is slow when it is that far
// from the median of all pairs of its kind, and is named apart only when neither of its ranks is.
#pragma once
#include <string>
#include <vector>

namespace parbench::links {

// Symmetric n x n matrices, row-major; the diagonal is ignored.
struct LinkMatrix {
  int n = 0;
  std::vector<double> latency_us, gbps;
  double latency(int a, int b) const { return latency_us[std::size_t(a) * n + b]; }
  double bandwidth(int a, int b) const { return gbps[std::size_t(a) * n + b]; }
};

struct SlowRank {
  int rank;
  std::string why;  // "latency 1.5e+03 us or more on all its 3 pairs inside a node, 450x the ranks' median best 3.3 us"
};
struct SlowPair {
  int a, b;
  std::string why;
};
struct LinkFindings {
  std::vector<SlowRank> ranks;
  std::vector<int> nodes;
  std::vector<SlowPair> pairs;  // only pairs neither of whose ranks is slow
};

// What is judged: latency, bandwidth or both (a busy host's latency is noise that a bandwidth question can leave out).
struct Judged {
  bool latency = true, bandwidth = true;
};

// `node_of[r]`: rank r's node. `factor` > 1.
LinkFindings find_slow_links(const LinkMatrix& m, const std::vector<int>& node_of, double factor, Judged judged = {});

// The test in one line, for the report.
std::string slow_link_test(double factor);

}  // namespace parbench::links
