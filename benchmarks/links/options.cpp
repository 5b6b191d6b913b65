// See options.h.
#include "benchmarks/links/options.h"

#include "app/cli.h"

namespace parbench::links {

void add_options(CLI::App& app, Options& o) {
  // Of the common options only the outputs: the probe runs on the host transports, and a trace has nothing to show.
  app.add_option("--csv", o.common.csv, "write one row per pair as CSV to this file");
  app.add_option("--json", o.common.json, "write the rows as JSON to this file");
  app.add_flag("--quiet,-q", o.common.quiet, "print no matrices, only errors");
  app.add_option("--ranks", o.ranks, "ranks as threads of this process (without a launcher)")
      ->check(integer_in(2, 1024));
  app.add_option("--latency-size", o.latency_size, "bytes of the ping-pong message that measures latency (K/M/G)")
      ->capture_default_str();
  app.add_option("--bandwidth-size", o.bandwidth_size,
                 "bytes each rank of a pair sends at once to measure bandwidth (K/M/G)")
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed exchanges per pair (the latency probe makes 5 times as many round trips)")->capture_default_str()
      ->check(integer_in(1, 1 << 20));
  app.add_option("-w,--warmup", o.warmup, "untimed ones before them")->capture_default_str()
      ->check(integer_in(0, 1 << 20));
  app.add_option("--passes", o.passes,
                 "times the whole schedule of pairs runs; each pair keeps its best (a busy host's noise passes, a "
                 "slow link stays)")
      ->capture_default_str()
      ->check(integer_in(1, 1000));
  app.add_option("--slow-factor", o.slow_factor,
                 "a rank or pair is slow when its latency is over this many times the ranks' median, or its "
                 "bandwidth under 1/this of it")
      ->capture_default_str()
      ->check(CLI::Range(1.01, 1e6));
  app.add_option("--judge", o.judge, "what names a rank, node or pair slow: latency, bandwidth or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"latency", "bandwidth", "both"}));
  app.add_option("-T,--timeout", o.timeout, "seconds a message may take before the run ends naming it (0: 300)")
      ->check(CLI::Range(0.0, 1e6));
}

Sizes checked_sizes(const Options& o) {
  return {parse_size_option("--latency-size", o.latency_size), parse_size_option("--bandwidth-size", o.bandwidth_size)};
}

}  // namespace parbench::links
