// See pair_rounds.h.
#include "benchmarks/links/pair_rounds.h"

namespace parbench::links {

std::vector<std::vector<RankPair>> pair_rounds(int n) {
  // With an odd count a placeholder rank n joins; whoever it meets sits the round out.
  const int m = n % 2 ? n + 1 : n;
  std::vector<std::vector<RankPair>> rounds;
  if (n < 2) return rounds;
  for (int r = 0; r + 1 < m; ++r) {
    // Position 0 stays; the others turn by one place per round. Position i meets position m - 1 - i.
    auto at = [&](int pos) { return pos == 0 ? 0 : (r + pos - 1) % (m - 1) + 1; };
    std::vector<RankPair> round;
    for (int i = 0; i < m / 2; ++i) {
      const int a = at(i), b = at(m - 1 - i);
      if (a < n && b < n) round.push_back(a < b ? RankPair{a, b} : RankPair{b, a});
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

}  // namespace parbench::links
