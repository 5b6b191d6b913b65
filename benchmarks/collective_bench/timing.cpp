// See timing.h. The timed loop stays free of per-operation clock reads and deadline checks in the default mode
// (-z 0 without -I): the implementations enforce the timeout themselves (library calls through a watchdog).
#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "collectives/fault_injection.h"
#include "core/memory.h"
#include "profiles/range.h"

namespace parbench {
namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Waits for everything issued (a library's queued operations, the device's work). A range, so that a trace shows
// how many waits a timed batch made.
void wait_done(Communicator& comm) {
  PB_RANGE("wait", Category::communication);
  comm.end_batch();
  device_synchronize(comm.device());
}

}  // namespace

Timing time_collective(Communicator& comm, const Algorithm& algo, const CollArgs& args, const TimingConfig& c) {
  auto issue = [&] {
    if (c.world) fault_point(*c.world);
    if (!c.skip) comm.run(args, algo);
  };
  comm.begin_batch();
  for (long i = 0; i < long(c.warmup) * c.agg; ++i) issue();
  wait_done(comm);
  comm.barrier();

  PB_RANGE("timed batch", Category::communication, {.chunk = c.iters});
  const bool per_op_wait = c.blocking >= 1, batched = !per_op_wait;
  const bool record = c.per_iter;
  std::vector<double> samples;
  if (record) samples.reserve(std::size_t(c.iters));
  double between_barriers = 0;  // -z 3: the operations' own times
  Timing t;
  const auto t0 = Clock::now();
  if (batched) comm.begin_batch();
  for (int i = 0; i < c.iters; ++i) {
    const auto ti = record ? Clock::now() : t0;
    double iter_ops = 0;
    for (int j = 0; j < c.agg; ++j) {
      if (c.blocking == 3) {
        comm.barrier();
        const auto tj = Clock::now();
        issue();
        wait_done(comm);
        iter_ops += since(tj);
        continue;
      }
      issue();
      if (per_op_wait) wait_done(comm);
      if (c.blocking == 2) comm.barrier();
    }
    if (record && batched) {  // -I: one wait per iteration
      wait_done(comm);
      comm.begin_batch();
    }
    between_barriers += iter_ops;
    if (record) samples.push_back((c.blocking == 3 ? iter_ops : since(ti)) / c.agg);
  }
  t.cpu_time = since(t0);
  if (batched) wait_done(comm);
  t.time = since(t0);
  const double ops = double(c.iters) * c.agg;
  if (c.blocking == 3) t.time = t.cpu_time = between_barriers;
  t.time /= ops;
  t.cpu_time /= ops;
  if (record) {
    samples.erase(samples.begin(), samples.begin() + std::min<std::size_t>(samples.size(), c.per_iter_skip));
    iteration_stats(std::move(samples), t);
  }
  return t;
}

void iteration_stats(std::vector<double> s, Timing& out) {
  if (s.empty()) return;
  std::sort(s.begin(), s.end());
  out.min = s.front(), out.max = s.back();
  // Nearest rank: the smallest sample with at least 99% of the samples at or below it.
  const std::size_t rank = std::size_t(std::ceil(0.99 * double(s.size())));
  out.p99 = s[std::max<std::size_t>(rank, 1) - 1];
  double mean = 0, var = 0;
  for (double x : s) mean += x;
  mean /= double(s.size());
  for (double x : s) var += (x - mean) * (x - mean);
  var /= double(s.size());
  out.cv = mean > 0 ? std::sqrt(var) / mean : 0;
}

Timing reduce_over_ranks(Communicator& comm, const Timing& mine, int average) {
  double v[6] = {mine.time, mine.cpu_time, mine.min, mine.max, mine.p99, mine.cv}, r[6] = {};
  if (average == 0) {
    std::copy(v, v + 6, r);
    comm.broadcast(v, r, 6, DType::f64, 0, &find_algorithm("naive"));
  } else {
    const ReduceOp op = average == 1 ? ReduceOp::avg : average == 2 ? ReduceOp::min : ReduceOp::max;
    comm.allreduce(v, r, 6, DType::f64, op, &find_algorithm("naive"));
  }
  return Timing{r[0], r[1], r[2], r[3], r[4], r[5]};
}

}  // namespace parbench
