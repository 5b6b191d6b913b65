// Every pair of n ranks in rounds of disjoint pairs (a round-robin tournament: the circle method), so that a probe
// of every link takes n - 1 rounds for even n and n for odd n, each rank in at most one pair per round.
#pragma once
#include <utility>
#include <vector>

namespace parbench::links {

using RankPair = std::pair<int, int>;  // first < second

// The rounds for `n` ranks (n >= 1): every one of the n(n-1)/2 pairs exactly once.
std::vector<std::vector<RankPair>> pair_rounds(int n);

}  // namespace parbench::links
