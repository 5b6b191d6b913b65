// See timing.h. The timed loop stays free of per-operation clock reads and deadline checks in the default mode
// (-z 0 without -I): the implementations enforce the timeout themselves (library calls through a watchdog).
#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "base/clock.h"
#include "collectives/registry.h"
#include "collectives/communicator/fault_injection.h"
#include "core/graph.h"
#include "core/memory.h"
#include "profiles/range.h"

namespace parbench {
namespace {

// Waits for everything issued (a library's queued operations, the device's work). A range, so that a trace shows
// how many waits a timed batch made.
void wait_done(Communicator& comm) {
  PB_RANGE("wait", Category::communication);
  comm.end_batch();
  device_synchronize(comm.device());
}

// A range too, so that a trace counts the barriers -z adds.
void barrier(Communicator& comm) {
  PB_RANGE("barrier", Category::communication);
  comm.barrier();
}

// -G, as nccl-tests times it: the warm-up runs (at least one call, since the first call of a size may allocate,
// which a capture forbids), the n x m operations are captured into a graph instead of run, and after a barrier the
// graph is launched N times back to back and waited for once. Time per operation: the total / (n x m x N); the
// issuing time (-C) / (n x m), as nccl-tests divides it.
template <class Issue>
Timing time_graph(Communicator& comm, const CollArgs& args, const TimingConfig& c, Issue issue) {
  comm.begin_batch();
  for (long i = 0; i < std::max(1L, long(c.warmup) * c.agg); ++i) issue();
  wait_done(comm);
  comm.barrier();
  PB_RANGE("timed batch", Category::communication, {.chunk = c.iters});
  const double ops = double(c.iters) * c.agg;
  comm.begin_batch();
  StreamGraph graph(args.stream);
  for (long i = 0; i < long(ops); ++i) issue();
  graph.end();
  barrier(comm);
  Timing t;
  const auto t0 = Clock::now();
  for (int l = 0; l < c.graph_launches; ++l) graph.launch();
  t.cpu_time = seconds_since(t0) / ops;
  wait_done(comm);
  t.time = seconds_since(t0) / (ops * c.graph_launches);
  return t;
}

}  // namespace

Timing time_collective(Communicator& comm, const Algorithm& algo, const CollArgs& args, const TimingConfig& c) {
  auto issue = [&] {
    if (c.world) fault_point(*c.world);
    if (!c.skip) comm.run(args, algo);
  };
  if (c.graph_launches > 0) return time_graph(comm, args, c, issue);
  comm.begin_batch();
  for (long i = 0; i < long(c.warmup) * c.agg; ++i) issue();
  wait_done(comm);
  comm.barrier();

  PB_RANGE("timed batch", Category::communication, {.chunk = c.iters});
  const bool per_op_wait = c.blocking == kWaitAndBarrier || c.blocking == kWaitOnly;
  const bool alone = c.blocking == kIterAlone, batched = !per_op_wait && !alone;
  Timing t;
  if (c.per_iter) t.iter_times.reserve(std::size_t(c.iters));
  double alone_total = 0;  // -z 3: the iterations' own times, barriers left out
  const double waited0 = transport_wait_seconds();
  const auto t0 = Clock::now();
  if (batched) comm.begin_batch();
  for (int i = 0; i < c.iters; ++i) {
    if (c.late_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(c.late_s));
    if (alone) barrier(comm);
    const auto ti = c.per_iter || alone ? Clock::now() : t0;
    for (int j = 0; j < c.agg; ++j) {
      issue();
      if (per_op_wait) wait_done(comm);
      if (c.blocking == kWaitAndBarrier) barrier(comm);
    }
    if (batched && c.per_iter) {  // -I: one wait per iteration
      wait_done(comm);
      comm.begin_batch();
    }
    if (alone) wait_done(comm);
    if (!c.per_iter && !alone) continue;
    const double took = seconds_since(ti);
    alone_total += took;
    if (c.per_iter) t.iter_times.push_back(took / c.agg);
  }
  t.cpu_time = seconds_since(t0);
  if (batched) wait_done(comm);
  t.time = seconds_since(t0);
  t.own_time = std::max(0.0, t.time - (transport_wait_seconds() - waited0));
  if (alone) t.time = t.cpu_time = alone_total;
  const double ops = double(c.iters) * c.agg;
  t.time /= ops;
  t.cpu_time /= ops;
  t.own_time /= ops;
  return t;
}

IterStats iteration_stats(std::vector<double> s) {
  IterStats out;
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  auto nearest_rank = [&](std::size_t p) { return s[std::min(n - 1, (n * p + 99) / 100 - 1)]; };
  out.min = s.front(), out.max = s.back();
  out.p50 = s[n / 2];
  out.p95 = nearest_rank(95);
  out.p99 = nearest_rank(99);
  double sum = 0, var = 0;
  for (double x : s) sum += x;
  out.avg = sum / double(n);
  for (double x : s) var += (x - out.avg) * (x - out.avg);
  out.stdev = std::sqrt(var / double(n));
  out.cv_pct = out.avg > 0 ? out.stdev / out.avg * 100.0 : 0;
  return out;
}

Timing reduce_over_ranks(Communicator& comm, const Timing& mine, int average) {
  double v[2] = {mine.time, mine.cpu_time}, r[2] = {};
  if (average == 0) {
    std::copy(v, v + 2, r);
    comm.broadcast(v, r, 2, DType::f64, 0, &find_algorithm("naive"));
  } else {
    const ReduceOp op = average == 1 ? ReduceOp::avg : average == 2 ? ReduceOp::min : ReduceOp::max;
    comm.allreduce(v, r, 2, DType::f64, op, &find_algorithm("naive"));
  }
  return Timing{r[0], r[1], mine.iter_times, mine.own_time};
}

}  // namespace parbench
