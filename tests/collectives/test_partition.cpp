// The block split and the butterflies' fold (collectives/table/partition.h), which the host-driven algorithms and
// the device-side kernels share: checked against their definitions, worked out another way.
#include <gtest/gtest.h>

#include <set>

#include "collectives/table/partition.h"

namespace parbench {
namespace {

TEST(Partition, EvenPartsCoverTheMessageInOrderLongerOnesFirst) {
  for (unsigned long long count = 0; count <= 70; ++count)
    for (unsigned long long parts = 1; parts <= 9; ++parts) {
      unsigned long long next = 0;
      for (unsigned long long i = 0; i < parts; ++i) {
        const EvenPart p = even_part(count, parts, i);
        EXPECT_EQ(p.offset, next) << count << " in " << parts << ", part " << i;
        // The first count % parts parts hold one element more than the others.
        EXPECT_EQ(p.length, count / parts + (i < count % parts ? 1 : 0)) << count << " in " << parts << ", " << i;
        next = p.offset + p.length;
      }
      EXPECT_EQ(next, count) << count << " in " << parts;
    }
}

TEST(Partition, ButterflyFoldPairsTheExtraRanksAndNumbersTheRest) {
  for (int n = 1; n <= 33; ++n) {
    int p2 = 1, steps = 0;
    while (2 * p2 <= n) p2 *= 2, ++steps;
    EXPECT_EQ(butterfly_steps(n), steps) << n;
    std::set<int> virtual_ranks;
    int folded = 0;
    for (int r = 0; r < n; ++r) {
      const ButterflyFold f(n, r);
      EXPECT_EQ(f.p2, p2);
      EXPECT_EQ(f.extra, n - p2);
      if (f.folded) {
        // A folded rank hands its data to the rank before it, which plays the same virtual rank.
        ++folded;
        const ButterflyFold partner(n, r - 1);
        EXPECT_FALSE(partner.folded) << n << ": " << r;
        EXPECT_EQ(partner.v, f.v) << n << ": " << r;
        continue;
      }
      EXPECT_EQ(f.real_of(f.v), r) << n << ": " << r;
      virtual_ranks.insert(f.v);
    }
    EXPECT_EQ(folded, n - p2) << n;
    EXPECT_EQ(int(virtual_ranks.size()), p2) << n;
    if (!virtual_ranks.empty()) EXPECT_EQ(*virtual_ranks.rbegin(), p2 - 1) << n;
    // Virtual rank v owns the real blocks [lo(v), lo(v + 1)): two where a rank folded into it, else one.
    const ButterflyFold f(n, 0);
    EXPECT_EQ(f.lo(0), 0);
    EXPECT_EQ(f.lo(p2), n) << n;
    for (int v = 0; v < p2; ++v) EXPECT_EQ(f.lo(v + 1) - f.lo(v), v < n - p2 ? 2 : 1) << n << ": " << v;
  }
}

}  // namespace
}  // namespace parbench
