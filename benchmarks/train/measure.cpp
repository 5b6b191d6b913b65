// bench_train's measurement on every rank: timed steps, pipeline bubbles (measured and replayed), memory and
// communication per rank, and the comparison with a single-rank run.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "collectives/table/measurement.h"
#include "core/current_stream.h"
#include "core/host_counts.h"
#include "benchmarks/train/train_run.h"
#include "parallel/schedule/play.h"
#include "parallel/schemes/model_parallel.h"
#include "profiles/range.h"
#include "profiles/trace.h"

namespace parbench::train_bench {

std::array<double, RankStats::kDoubles> RankStats::pack() const {
  std::array<double, kDoubles> v{peak_bytes, comm_bytes, host_device_bytes, busy_ms,        span_ms, bubble,
                                 in_flight,  host_waits, launches,          device_mallocs, overlap};
  for (int c = 0; c < kMemCategories; ++c) {
    v[std::size_t(kScalars + c)] = double(at_peak[std::size_t(c)]);
    v[std::size_t(kScalars + kMemCategories + c)] = double(estimate[std::size_t(c)]);
  }
  return v;
}

RankStats RankStats::unpack(const double* v) {
  RankStats s{v[0], {}, {}, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]};
  for (int c = 0; c < kMemCategories; ++c) {
    s.at_peak[std::size_t(c)] = std::size_t(v[kScalars + c]);
    s.estimate[std::size_t(c)] = std::size_t(v[kScalars + kMemCategories + c]);
  }
  return s;
}

namespace {

// max over parameter tensors of max|p - ref| / max|ref|.
double max_param_diff(const ParamLayout& layout, const std::vector<float>& p, const std::vector<float>& ref) {
  double worst = 0;
  for (const auto& unit : layout.units)
    for (const auto& spec : unit.params) {
      double diff = 0, scale = 0;
      const std::int64_t base = unit.offset + spec.offset, n = shape_numel(spec.shape);
      for (std::int64_t i = 0; i < n; ++i) {
        diff = std::max(diff, double(std::fabs(p[base + i] - ref[base + i])));
        scale = std::max(scale, double(std::fabs(ref[base + i])));
      }
      worst = std::max(worst, scale > 0 ? diff / scale : diff);
    }
  return worst;
}

// The step's bubble replayed from every stage's measured compute-action times (replay_schedule), each pipeline
// group (ranks of one data- and tensor-parallel index) on its own, as the mean over all ranks.
double replayed_bubble(Communicator& world, const ParallelShape& sh, const PipeSchedule& schedule,
                       const std::vector<double>& my_action_ms) {
  const std::size_t n = my_action_ms.size();
  std::vector<double> all(n * std::size_t(world.size()));
  world.allgather(my_action_ms.data(), all.data(), n, DType::f64);  // every stage runs n compute actions
  std::map<std::pair<int, int>, std::vector<std::vector<double>>> groups;  // (dp, tp rank) -> [stage] times
  for (int r = 0; r < world.size(); ++r) {
    const ParallelGrid g = ParallelGrid::of(r, sh.dp, sh.tp, sh.pp);
    auto& stages = groups[{g.dp_rank, g.tp_rank}];
    stages.resize(std::size_t(sh.pp));
    stages[std::size_t(g.pp_rank)].assign(all.begin() + std::ptrdiff_t(r * n), all.begin() + std::ptrdiff_t((r + 1) * n));
  }
  double sum = 0;
  for (const auto& [group, stages] : groups)
    for (double b : replay_schedule(schedule, stages).bubble) sum += b;
  return sum / world.size();
}

// Binds the calling thread to core (local rank mod cores), so that each pipeline stage keeps a core of its own.
void pin_to_core(int local_rank) {
  const int cores = int(std::thread::hardware_concurrency());
  if (cores < 1) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(local_rank % cores, &set);
  if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0)
    throw Error("--pin: cannot bind rank " + std::to_string(local_rank) + " to core " +
                std::to_string(local_rank % cores) + " (error " + std::to_string(e) + ")");
}

// The timed steps' series, as every rank saw them (times and mean bubbles are the same on all ranks).
struct StepSeries {
  std::vector<double> step_ms, mean_bubble, replayed_bubble, my_bubble;
  // This rank's step thread per timed step: host waits, launches, raw device allocations; and the overlap.
  std::vector<double> host_waits, launches, device_mallocs, overlap;
  double busy_ms = 0, span_ms = 0, loss = 0;
  int in_flight = 0;
};

// A pipeline step's bubbles: this rank's, the mean over ranks and the replay of the measured actions.
void record_pipeline(Communicator& comm, const PipelineTiming& p, const ParallelShape& shape,
                     const PipeSchedule& schedule, bool timed, StepSeries& out) {
  double step_span = p.span_ms;  // the pipeline ends when its last rank ends
  comm.allreduce(&step_span, &step_span, 1, DType::f64, ReduceOp::max);
  out.in_flight = std::max(out.in_flight, p.peak_in_flight);
  if (!timed) return;
  out.busy_ms += p.busy_ms, out.span_ms += step_span;
  double bubble = step_span > 0 ? 1 - p.busy_ms / step_span : 0;
  out.my_bubble.push_back(bubble);
  comm.allreduce(&bubble, &bubble, 1, DType::f64, ReduceOp::sum);
  out.mean_bubble.push_back(bubble / comm.size());
  out.replayed_bubble.push_back(replayed_bubble(comm, shape, schedule, p.action_ms));
}

void cuda_profiler_at(const Options& o, int step) {
  if (step == o.profile_begin) cuda_profiler(true);
  if (step == o.profile_end) cuda_profiler(false);
}

// A rank's streams and what times them: the step's work is queued on `compute` and `communication`, and the host
// waits once, at the step's end, for both (the communication stream's end joins the compute stream).
struct RankStreams {
  explicit RankStreams(const Device& d) : compute(d, true), communication(d, true), timeline(d), end(d) {}
  void wait_for_step(Communicator& comm) {
    end.record(communication);
    end.wait_on(compute);
    comm.wait_stream(compute.native());
  }
  Stream compute, communication;
  StreamTimeline timeline;
  Event end;
};

void record_counts(const HostCounts& c, double overlap, StepSeries& out) {
  out.host_waits.push_back(double(c.host_waits));
  out.launches.push_back(double(c.launches));
  out.device_mallocs.push_back(double(c.device_mallocs));
  out.overlap.push_back(overlap);
}

StepSeries run_steps(const Options& o, Communicator& comm, Scheme& scheme, RankStreams& streams) {
  StepSeries out;
  const ParallelShape shape = scheme.shape();
  std::optional<PipeSchedule> schedule;  // the scheme's, rebuilt for the replay
  if (scheme.last_step_pipeline())
    schedule = make_schedule(shape.schedule, shape.pp, shape.microbatches, shape.virtual_stages);
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    // What a failure names: the step and the scheme (a stage's messages, a bucket's allreduce run inside it).
    MeasurementScope measuring("training step " + std::to_string(s) + " of " + std::to_string(o.warmup + o.steps) +
                               " (scheme " + std::string(o.train.scheme->name) +
                               (schedule ? ", schedule " + std::string(shape.schedule.name()) + ", " +
                                               std::to_string(shape.pp) + " stages"
                                         : std::string()) +
                               ")");
    comm.barrier();
    cuda_profiler_at(o, s);
    auto t0 = std::chrono::steady_clock::now();
    const HostCounts before = host_counts();
    {
      PB_RANGE("step", Category::compute, {.microbatch = s});
      streams.timeline.start(streams.compute);
      scheme.queue_step(s);
      streams.wait_for_step(comm);  // on a GPU the step's last kernels may still be queued
    }
    // The streams are done but for the step range's end: the step's stream-timed ranges can be read without a wait.
    if (TraceRecorder::instance().enabled()) TraceRecorder::instance().resolve_stream_ranges();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const HostCounts counts = host_counts() - before;
    const double overlap = overlap_fraction(streams.timeline.intervals());
    out.loss = scheme.loss();
    comm.allreduce(&ms, &ms, 1, DType::f64, ReduceOp::max);
    if (s >= o.warmup) out.step_ms.push_back(ms), record_counts(counts, overlap, out);
    if (const PipelineTiming* p = scheme.last_step_pipeline())
      record_pipeline(comm, *p, shape, *schedule, s >= o.warmup, out);
  }
  if (o.profile_end >= o.warmup + o.steps) cuda_profiler(false);
  return out;
}

std::vector<RankStats> gather_stats(Communicator& comm, const RankStats& mine) {
  const auto packed = mine.pack();
  std::vector<double> all(RankStats::kDoubles * std::size_t(comm.size()));
  comm.allgather(packed.data(), all.data(), RankStats::kDoubles, DType::f64);
  std::vector<RankStats> stats;
  for (int r = 0; r < comm.size(); ++r) stats.push_back(RankStats::unpack(&all[std::size_t(r) * RankStats::kDoubles]));
  return stats;
}

// Rank 0 trains the single-rank reference on the same global batch, with the same micro-batch size.
std::optional<double> diff_vs_single(const Options& o, Communicator& comm, const Scheme& scheme,
                                     const std::vector<float>& params, const Stream& stream) {
  Communicator alone = comm.split(comm.rank() == 0 ? 0 : 1, comm.rank());
  std::optional<double> diff;
  if (comm.rank() == 0) {
    TrainConfig single = o.train;
    single.scheme = &find_scheme_kind("single");
    single.offload = false;
    single.micro_batch = o.train.global_batch / (scheme.shape().dp * scheme.shape().microbatches);
    TrackedAllocator ref_alloc(comm.device());
    auto ref = make_scheme(single, {alone, ref_alloc, stream});
    for (int s = 0; s < o.warmup + o.steps; ++s) ref->step(s);
    diff = max_param_diff(make_layout(o.train.model), params, ref->full_params());
  }
  comm.barrier();
  return diff;
}

}  // namespace

void run_rank(const Options& o, Communicator& comm, RunResult& out) {
  if (o.pin) pin_to_core(comm.local_rank());
  TraceTrack track(comm.rank(), "compute");
  TrackedAllocator alloc(comm.device());
  RankStreams streams(comm.device());
  const Stream& stream = streams.compute;
  CurrentStream allocating_for(stream.native());  // the caching pool's blocks of this rank belong to it
  std::optional<TraceStream> traced_on;  // on a GPU a traced range is timed by events on the compute stream
  if (!comm.device().on_host()) traced_on.emplace(stream, "compute stream");
  auto scheme = make_scheme(o.train, {comm, alloc, stream, &streams.communication, &streams.timeline});
  alloc.reset_peaks();  // measure training, not set-up temporaries
  const StepSeries series = run_steps(o, comm, *scheme, streams);

  RankStats mine;
  mine.peak_bytes = double(alloc.peak_total());
  mine.at_peak = alloc.split_at_peak();
  mine.estimate = scheme->estimated_state_bytes();
  mine.comm_bytes = double(scheme->last_step_comm().bytes);
  mine.host_device_bytes = double(scheme->last_step_comm().host_device_bytes);
  mine.busy_ms = series.busy_ms, mine.span_ms = series.span_ms, mine.in_flight = series.in_flight;
  mine.bubble = median(series.my_bubble);
  mine.host_waits = median(series.host_waits), mine.launches = median(series.launches);
  mine.device_mallocs = median(series.device_mallocs), mine.overlap = median(series.overlap);
  std::vector<RankStats> all = gather_stats(comm, mine);
  const std::vector<float> params = scheme->full_params();
  const std::optional<double> diff = o.check ? diff_vs_single(o, comm, *scheme, params, stream) : std::nullopt;
  if (comm.rank() != 0) return;
  out.step_ms = series.step_ms;
  out.step_bubble = series.mean_bubble;
  out.step_bubble_replayed = series.replayed_bubble;
  out.ranks = std::move(all);
  out.loss = series.loss;
  out.max_diff = diff;
  out.shape = scheme->shape();
  out.pipeline = scheme->last_step_pipeline() != nullptr;
  out.world = comm.size();
}

}  // namespace parbench::train_bench
