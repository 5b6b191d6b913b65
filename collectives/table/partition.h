// How the collectives split a message into blocks and fold a group that is not a power of two: the rules the
// host-driven algorithms (algorithms/) and the device-side kernels (device_side/) share, so both compute the same
// blocks and partners from the same counts. Host and device code (nvcc sees __host__ __device__).
#pragma once

#if defined(__CUDACC__)
#define PB_PARTITION_HD __host__ __device__
#else
#define PB_PARTITION_HD
#endif

namespace parbench {

// Part i of `count` elements split as evenly as possible into `parts` (the first count % parts one longer):
// elements [offset, offset + length).
struct EvenPart {
  unsigned long long offset, length;
};
PB_PARTITION_HD constexpr EvenPart even_part(unsigned long long count, unsigned long long parts,
                                             unsigned long long i) {
  const unsigned long long base = count / parts, rem = count % parts;
  return {i * base + (i < rem ? i : rem), base + (i < rem ? 1 : 0)};
}

// The butterflies' fold (recursive doubling, halving-doubling): a group of n ranks folds onto p2 = 2^steps virtual
// ranks, the largest power of two not above n. Ranks r < 2 * extra pair up: odd r hands its data to r - 1 first
// and takes the result from it last; the virtual rank of r is r / 2 there and r - extra above. Virtual rank v owns
// real blocks [lo(v), lo(v + 1)), and real_of(v) is the rank that plays it.
struct ButterflyFold {
  int n = 1, p2 = 1, steps = 0, extra = 0, v = 0;
  bool folded = false;  // odd rank below 2 * extra: hands its data in, takes the result
  PB_PARTITION_HD constexpr ButterflyFold(int ranks, int rank) : n(ranks) {
    while (p2 * 2 <= n) p2 *= 2, ++steps;
    extra = n - p2;
    folded = rank < 2 * extra && rank % 2 == 1;
    v = rank < 2 * extra ? rank / 2 : rank - extra;
  }
  PB_PARTITION_HD constexpr int real_of(int vr) const { return vr < extra ? 2 * vr : vr + extra; }
  PB_PARTITION_HD constexpr int lo(int vr) const { return vr < extra ? 2 * vr : vr + extra; }  // lo(p2) == n
};

// The butterflies' exchange steps for n ranks: lg p2.
PB_PARTITION_HD constexpr int butterfly_steps(int ranks) { return ButterflyFold(ranks, 0).steps; }

}  // namespace parbench
