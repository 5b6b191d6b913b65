// Calibration from our own measurements: alpha (latency) and beta (seconds per byte) of a link fitted to the rows of
// bench_<collective> CSVs, with the fit's error, per (collective, implementation, ranks).
#pragma once
#include <string>
#include <vector>

namespace parbench::predict {

struct CollectiveSample {
  std::string collective, impl;
  int ranks = 1;
  double bytes = 0, seconds = 0;
};

// Rows of a bench_<collective> CSV (columns collective, impl, ranks, bytes, time_us; others ignored). UsageError
// naming the file and line for a missing column or a bad value.
std::vector<CollectiveSample> read_collective_csv(const std::string& path);

struct LinkFit {
  std::string collective, impl;
  int ranks = 1, samples = 0;
  double alpha = 0;            // seconds per message step
  double beta = 0;             // seconds per byte on one link
  double mean_rel_error = 0;   // |model - measured| / measured over the group's rows
  double max_rel_error = 0;
  double gbps() const { return beta > 0 ? 1e-9 / beta : 0; }
};

// Least squares of time = steps(collective, n) alpha + volume(collective, n) bytes beta (the ring's counts: allreduce
// 2(n-1) steps and 2(n-1)/n of the bytes, all-gather and reduce-scatter n-1 and (n-1)/n, others 1 and 1), one fit
// per (collective, impl, ranks) with at least two sizes; alpha is kept >= 0.
std::vector<LinkFit> fit_links(const std::vector<CollectiveSample>& samples);

}  // namespace parbench::predict
