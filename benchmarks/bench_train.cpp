// bench_train: trains the MLP or the GPT-style model under one parallelism scheme and reports step time,
// throughput, model FLOP/s, memory per category, communication per step and, with --check, the largest
// parameter difference from a single-rank run on the same global batch.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <thread>
#include <nlohmann/json.hpp>

#include "collectives/bootstrap.h"
#include "core/cli.h"
#include "core/error.h"
#include "core/report.h"
#include "parallel/schedule/simulate.h"
#include "parallel/schemes/model_parallel.h"
#include "parallel/train.h"
#include "profiles/range.h"

using namespace parbench;

namespace {

struct Options {
  CommonOptions common;
  TrainConfig train;
  std::string model = "gpt", dtype = "f32", optimizer = "adamw", attention = "flash";
  int ranks = 0, steps = 5, warmup = 1;
  std::string profile_steps;  // "a:b": steps a..b-1 inside cudaProfilerStart/Stop
  int profile_begin = -1, profile_end = -1;
  double timeout = 300, peak_tflops = 0, check_tolerance = 0;
  bool check = false, estimate_memory = false, no_overlap = false, pin = false;
};

// What each rank measured, gathered to every rank as doubles.
// kBusy, kSpan: pipeline compute time and the step's pipeline span (max over ranks), summed over timed steps;
// kBubble: the median over timed steps of this rank's 1 - busy / span.
enum Field { kPeak, kSplit0, kComm = kSplit0 + kMemCategories, kHostDevice, kBusy, kSpan, kBubble, kInFlight, kFields };

struct RunResult {
  std::vector<double> step_ms;             // per timed step, slowest rank
  std::vector<double> step_bubble;         // per timed step, mean over ranks (pipeline schemes)
  std::vector<double> step_bubble_replayed;  // per timed step, the same from the replay of the measured actions
  std::vector<std::vector<double>> ranks;  // [rank][Field]
  MemSplit estimate{};                     // closed form for the rank with the largest peak
  double loss = 0;
  std::optional<double> max_diff;
  ParallelShape shape;
  bool pipeline = false;
};

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
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

void run_rank(const Options& o, Communicator& comm, RunResult& out) {
  if (o.pin) pin_to_core(comm.local_rank());
  TraceTrack track(comm.rank(), "compute");
  TrackedAllocator alloc(comm.device());
  Stream stream(comm.device());
  std::optional<TraceDeviceWait> gpu_wait;  // a traced range on a GPU lasts until its kernels have run
  if (!comm.device().on_host()) gpu_wait.emplace([&stream] { stream.synchronize(); });
  auto scheme = make_scheme(o.train, {comm, alloc, stream});
  alloc.reset_peaks();  // measure training, not set-up temporaries
  double loss = 0, busy = 0, span = 0;
  int in_flight = 0;
  std::vector<double> times, my_bubbles, mean_bubbles, replayed_bubbles;
  const ParallelShape shape = scheme->shape();
  std::optional<PipeSchedule> schedule;  // the scheme's, rebuilt for the replay
  if (scheme->last_step_pipeline())
    schedule = make_schedule(shape.schedule, shape.pp, shape.microbatches, shape.virtual_stages);
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    comm.barrier();
    if (s == o.profile_begin) cuda_profiler(true);
    if (s == o.profile_end) cuda_profiler(false);
    auto t0 = std::chrono::steady_clock::now();
    {
      PB_RANGE("step", Category::compute, {.microbatch = s});
      loss = scheme->step(s);
      stream.synchronize();  // on a GPU the step's last kernels may still be queued
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    comm.allreduce(&ms, &ms, 1, DType::f64, ReduceOp::max);
    if (s >= o.warmup) times.push_back(ms);
    if (const PipelineTiming* p = scheme->last_step_pipeline()) {
      double step_span = p->span_ms;  // the pipeline ends when its last rank ends
      comm.allreduce(&step_span, &step_span, 1, DType::f64, ReduceOp::max);
      in_flight = std::max(in_flight, p->peak_in_flight);
      if (s >= o.warmup) {
        busy += p->busy_ms, span += step_span;
        double bubble = step_span > 0 ? 1 - p->busy_ms / step_span : 0;
        my_bubbles.push_back(bubble);
        comm.allreduce(&bubble, &bubble, 1, DType::f64, ReduceOp::sum);
        mean_bubbles.push_back(bubble / comm.size());
        replayed_bubbles.push_back(replayed_bubble(comm, shape, *schedule, p->action_ms));
      }
    }
  }
  if (o.profile_end >= o.warmup + o.steps) cuda_profiler(false);
  std::vector<double> mine(kFields, 0.0), all(std::size_t(kFields) * comm.size());
  mine[kPeak] = double(alloc.peak_total());
  MemSplit split = alloc.split_at_peak();
  for (int c = 0; c < kMemCategories; ++c) mine[kSplit0 + c] = double(split[c]);
  mine[kComm] = double(scheme->last_step_comm().bytes);
  mine[kHostDevice] = double(scheme->last_step_comm().host_device_bytes);
  mine[kBusy] = busy, mine[kSpan] = span, mine[kBubble] = median(my_bubbles), mine[kInFlight] = in_flight;
  comm.allgather(mine.data(), all.data(), kFields, DType::f64);
  std::vector<double> estimates(kMemCategories * comm.size()), my_est(kMemCategories);
  MemSplit est = scheme->estimated_state_bytes();
  for (int c = 0; c < kMemCategories; ++c) my_est[c] = double(est[c]);
  comm.allgather(my_est.data(), estimates.data(), kMemCategories, DType::f64);
  std::vector<float> params = scheme->full_params();

  std::optional<double> diff;
  if (o.check) {
    // Rank 0 trains the single-rank reference on the same global batch, with the same micro-batch size.
    Communicator alone = comm.split(comm.rank() == 0 ? 0 : 1, comm.rank());
    if (comm.rank() == 0) {
      TrainConfig single = o.train;
      single.scheme = "single";
      single.offload = false;
      single.micro_batch = o.train.global_batch / (scheme->shape().dp * scheme->shape().microbatches);
      TrackedAllocator ref_alloc(comm.device());
      auto ref = make_scheme(single, {alone, ref_alloc, stream});
      for (int s = 0; s < o.warmup + o.steps; ++s) ref->step(s);
      diff = max_param_diff(make_layout(o.train.model), params, ref->full_params());
    }
    comm.barrier();
  }
  if (comm.rank() != 0) return;
  out.step_ms = times;
  out.step_bubble = mean_bubbles;
  out.step_bubble_replayed = replayed_bubbles;
  out.loss = loss;
  out.max_diff = diff;
  out.shape = scheme->shape();
  out.pipeline = scheme->last_step_pipeline() != nullptr;
  int heaviest = 0;
  for (int r = 0; r < comm.size(); ++r) {
    out.ranks.emplace_back(all.begin() + r * kFields, all.begin() + (r + 1) * kFields);
    if (all[r * kFields + kPeak] > all[heaviest * kFields + kPeak]) heaviest = r;
  }
  for (int c = 0; c < kMemCategories; ++c) out.estimate[c] = std::size_t(estimates[heaviest * kMemCategories + c]);
}

// "trace.json" -> "trace.rank3.json": under mpirun every process records its own rank.
std::string per_rank_path(const std::string& path, int rank) {
  const auto slash = path.find_last_of('/'), dot = path.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string tag = ".rank" + std::to_string(rank);
  return has_ext ? path.substr(0, dot) + tag + path.substr(dot) : path + tag;
}

const std::vector<Column>& csv_columns() {
  static const std::vector<Column> cols = {
      {"model"}, {"scheme"}, {"schedule"}, {"device"}, {"impl"}, {"ranks"}, {"tp"}, {"pp"}, {"dp"},
      {"microbatches"}, {"global_batch"}, {"micro_batch"}, {"step_ms", 3}, {"samples_per_s", 2},
      {"tokens_per_s", 1}, {"tflops_per_rank", 6}, {"mfu", 4}, {"bubble_measured", 4}, {"bubble_theory", 4},
      {"bubble_replayed", 4},
      {"peak_bytes"}, {"params_bytes"}, {"grads_bytes"}, {"optimizer_bytes"}, {"activations_bytes"},
      {"comm_buffer_bytes"}, {"workspace_bytes"}, {"comm_bytes_per_step"}, {"loss", 6},
      {"max_param_diff_vs_single", 9}, {"estimate_bytes"}};
  return cols;
}

int run(Options& o) {
  std::string why;
  Device dev = resolve_device(o.common.device, &why);
  if (!why.empty() && !o.common.quiet) std::cerr << why << "\n";
  TrainConfig& t = o.train;
  t.model.kind = parse_model_kind(o.model);
  t.model.dtype = parse_dtype(o.dtype);
  t.model.flash_attention = o.attention == "flash";
  if (o.optimizer != "adamw" && o.optimizer != "sgd")
    throw UsageError("--optimizer '" + o.optimizer + "' is unknown; accepted: adamw, sgd");
  t.optimizer = o.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
  t.overlap = !o.no_overlap;
  t.model.validate();
  const bool model_parallel = find_scheme_kind(t.scheme).model_parallel;
  if (!model_parallel &&
      (t.tp > 1 || t.pp > 1 || t.dp > 0 || t.microbatches > 0 || t.virtual_stages != 1))
    throw UsageError("--tp, --pp, --dp, --microbatches and --virtual-stages apply to schemes tp, sp, mp, pp and "
                     "hybrid, not to '" + t.scheme + "'");
  if (o.steps < 1) throw UsageError("--steps " + std::to_string(o.steps) + " must be >= 1");
  if (!o.profile_steps.empty()) {
    const auto colon = o.profile_steps.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      std::size_t used_a = 0, used_b = 0;
      o.profile_begin = std::stoi(o.profile_steps.substr(0, colon), &used_a);
      o.profile_end = std::stoi(o.profile_steps.substr(colon + 1), &used_b);
      if (used_a != colon || used_b != o.profile_steps.size() - colon - 1) throw std::invalid_argument("junk");
    } catch (const std::exception&) {
      o.profile_begin = o.profile_end = -1;
    }
    if (o.profile_begin < 0 || o.profile_end <= o.profile_begin)
      throw UsageError("--profile-steps '" + o.profile_steps + "' is not a range A:B of steps with 0 <= A < B");
  }
  if (!o.common.trace.empty()) TraceRecorder::instance().enable();

  RunResult result;
  if (o.check_tolerance < 0 || (o.check_tolerance > 0 && !o.check))
    throw UsageError("--check-tolerance " + std::to_string(o.check_tolerance) + " needs --check and a value >= 0");
  if (t.model.dtype == DType::f64 && dev.kind != DeviceKind::cpu)
    throw UsageError("--dtype f64 runs on the cpu device only, not on " + device_name(dev));
  LaunchOptions launch{o.ranks, dev, o.timeout};
  int world = 0, process_rank = 0;
  run_ranks(launch, [&](Communicator& comm) {
    if (comm.rank() == 0) world = comm.size();
    if (launched_by_mpirun()) process_rank = comm.rank();
    // Refuse bad batches and grids before anything is allocated.
    if (model_parallel) plan_model_parallel(t, comm.size());
    else accumulation_steps(t, comm.size());
    if (t.impl != "auto") {  // a library that cannot run here at all (nccl on cpu, mpi without mpirun)
      const Algorithm& a = comm.resolve(t.impl, Collective::allreduce);
      if (std::string why = a.unsupported(Collective::allreduce, comm); !why.empty())
        throw UsageError("--impl " + t.impl + " cannot run here: " + why);
    }
    run_rank(o, comm, result);
  });
  if (world == 0) {  // not rank 0 of an mpirun job: rank 0 reports; each process writes its own trace
    if (!o.common.trace.empty()) TraceRecorder::instance().write(per_rank_path(o.common.trace, process_rank));
    return 0;
  }

  const double step_ms = median(result.step_ms);
  const double samples_per_s = t.global_batch / (step_ms / 1e3);
  const double flops = model_flops_per_step(t.model, t.global_batch);
  const double tflops_per_rank = flops / (step_ms / 1e3) / world / 1e12;
  int heaviest = 0;
  for (int r = 0; r < world; ++r)
    if (result.ranks[r][kPeak] > result.ranks[heaviest][kPeak]) heaviest = r;
  double comm_max = 0;
  for (int r = 0; r < world; ++r) comm_max = std::max(comm_max, result.ranks[r][kComm]);
  const auto& h = result.ranks[heaviest];
  std::size_t estimate_total = 0;  // closed-form parameters + gradients + optimizer state of that rank
  for (std::size_t b : result.estimate) estimate_total += b;
  auto i64 = [](double v) { return Cell(std::int64_t(v)); };
  const ParallelShape& sh = result.shape;
  // Bubble: per step and rank 1 - busy / span; the median over steps of the mean over ranks (robust to a step
  // slowed by something else on the machine), and per stage the mean of its ranks' medians.
  std::vector<double> stage_bubble(std::size_t(sh.pp), 0.0);
  const double bubble = median(result.step_bubble);
  if (result.pipeline)
    for (int r = 0; r < world; ++r)
      stage_bubble[std::size_t(ParallelGrid::of(r, sh.dp, sh.tp, sh.pp).pp_rank)] +=
          result.ranks[r][kBubble] / (sh.dp * sh.tp);
  const Cell bubble_measured = result.pipeline ? Cell(bubble) : Cell{};
  const Cell bubble_theory =
      result.pipeline ? Cell(bubble_closed_form(sh.schedule, sh.pp, sh.microbatches, sh.virtual_stages)) : Cell{};
  const Cell bubble_replayed = result.pipeline ? Cell(median(result.step_bubble_replayed)) : Cell{};
  Table csv(csv_columns());
  csv.add_row({std::string(model_kind_name(t.model.kind)), t.scheme,
               sh.schedule.empty() ? Cell{} : Cell(sh.schedule), device_name(dev), t.impl, std::int64_t(world),
               std::int64_t(sh.tp), std::int64_t(sh.pp), std::int64_t(sh.dp), std::int64_t(sh.microbatches),
               std::int64_t(t.global_batch), std::int64_t(t.global_batch / (sh.dp * sh.microbatches)), step_ms,
               samples_per_s, samples_per_s * t.model.tokens_per_sample(), tflops_per_rank,
               o.peak_tflops > 0 ? Cell(tflops_per_rank / o.peak_tflops) : Cell{}, bubble_measured, bubble_theory,
               bubble_replayed,
               i64(h[kPeak]), i64(h[kSplit0 + 0]), i64(h[kSplit0 + 1]), i64(h[kSplit0 + 2]), i64(h[kSplit0 + 3]),
               i64(h[kSplit0 + 4]), i64(h[kSplit0 + 5]), i64(comm_max), result.loss,
               result.max_diff ? Cell(*result.max_diff) : Cell{}, std::int64_t(estimate_total)});
  if (!o.common.quiet) {
    const std::string dash = "-";
    Table text({{"scheme"}, {"schedule"}, {"dp.tp.pp"}, {"mb"}, {"step_ms", 2}, {"samples/s", 1}, {"tokens/s", 0},
                {"TFLOP/s/rank", 5}, {"bubble", 3}, {"theory", 3}, {"replay", 3}, {"peak_MiB", 2}, {"comm_MiB/step", 3}, {"loss", 5},
                {"diff_vs_single", 3}});
    text.add_row({t.scheme, sh.schedule.empty() ? dash : sh.schedule,
                  std::to_string(sh.dp) + "." + std::to_string(sh.tp) + "." + std::to_string(sh.pp),
                  std::int64_t(sh.microbatches), step_ms, samples_per_s, samples_per_s * t.model.tokens_per_sample(),
                  tflops_per_rank, result.pipeline ? bubble_measured : Cell(dash),
                  result.pipeline ? bubble_theory : Cell(dash), result.pipeline ? bubble_replayed : Cell(dash), h[kPeak] / 1048576.0, comm_max / 1048576.0,
                  result.loss, result.max_diff ? Cell(*result.max_diff) : Cell(dash)});
    text.write_text(std::cout);
  }
  if (o.estimate_memory) {
    std::cout << "\nmemory of rank " << heaviest << " (largest peak), bytes: measured at peak vs closed form\n";
    Table mem({{"category"}, {"measured"}, {"closed_form"}});
    for (int c = 0; c < kMemCategories; ++c) {
      bool state = c <= int(MemCategory::optimizer);
      mem.add_row({std::string(mem_category_name(MemCategory(c))), i64(h[kSplit0 + c]),
                   state ? Cell(std::int64_t(result.estimate[c])) : Cell(std::string("-"))});
    }
    mem.write_text(std::cout);
  }
  if (!o.common.csv.empty()) csv.write_csv(o.common.csv, /*append=*/true);
  if (!o.common.json.empty()) {
    nlohmann::json j = {{"results", csv.to_json()}, {"per_rank", nlohmann::json::array()}, {"step_ms", result.step_ms}};
    if (result.pipeline) {
      j["step_bubble"] = result.step_bubble;
      j["step_bubble_replayed"] = result.step_bubble_replayed;
    }
    for (int r = 0; r < world; ++r) {
      const ParallelGrid g = ParallelGrid::of(r, sh.dp, sh.tp, sh.pp);
      nlohmann::json pr = {{"rank", r}, {"dp_rank", g.dp_rank}, {"tp_rank", g.tp_rank}, {"pp_rank", g.pp_rank},
                           {"peak_bytes", result.ranks[r][kPeak]}, {"comm_bytes", result.ranks[r][kComm]},
                           {"host_device_bytes", result.ranks[r][kHostDevice]}};
      if (result.pipeline) {
        pr["busy_ms"] = result.ranks[r][kBusy] / o.steps;
        pr["pipeline_span_ms"] = result.ranks[r][kSpan] / o.steps;
        pr["bubble_median"] = result.ranks[r][kBubble];
        pr["peak_microbatches_in_flight"] = result.ranks[r][kInFlight];
      }
      for (int c = 0; c < kMemCategories; ++c)
        pr[std::string(mem_category_name(MemCategory(c))) + "_bytes"] = result.ranks[r][kSplit0 + c];
      j["per_rank"].push_back(pr);
    }
    if (result.pipeline) {
      j["per_stage"] = nlohmann::json::array();
      for (int st = 0; st < sh.pp; ++st)
        j["per_stage"].push_back({{"stage", st}, {"bubble_measured", stage_bubble[st]}});
    }
    write_file_atomically(o.common.json, j.dump(2) + "\n");
  }
  if (!o.common.trace.empty()) TraceRecorder::instance().write(o.common.trace);
  if (o.check && o.check_tolerance > 0 && result.max_diff && *result.max_diff > o.check_tolerance) {
    std::cerr << "bench_train: parameters differ from the single-rank run by " << *result.max_diff
              << " (relative), more than --check-tolerance " << o.check_tolerance << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Train a model under a parallelism scheme and measure it", "bench_train");
  Options o;
  add_common_options(app, o.common);
  auto& m = o.train.model;
  app.add_option("--model", o.model, "mlp or gpt")->capture_default_str();
  app.add_option("--layers", m.layers, "blocks")->capture_default_str();
  app.add_option("--hidden", m.hidden, "hidden size C")->capture_default_str();
  app.add_option("--heads", m.heads, "attention heads (gpt)")->capture_default_str();
  app.add_option("--seq", m.seq, "sequence length T (gpt)")->capture_default_str();
  app.add_option("--vocab", m.vocab, "vocabulary size V (gpt)")->capture_default_str();
  app.add_option("--ffn", m.ffn, "MLP hidden size (0: 4 x hidden)")->capture_default_str();
  app.add_option("--dtype", o.dtype, "f32, or bf16 with fp32 master weights")->capture_default_str();
  app.add_option("--attention", o.attention, "flash or plain")->check(CLI::IsMember({"flash", "plain"}))
      ->capture_default_str();
  app.add_option("--global-batch", o.train.global_batch, "samples per step over all ranks")->capture_default_str();
  app.add_option("--micro-batch", o.train.micro_batch, "samples per microbatch (0: global / ranks)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 30));
  app.add_option("--scheme", o.train.scheme,
                 "single, dp, ddp, zero1, zero2, zero3 (fsdp), localsgd, tp, sp, mp, pp, hybrid")
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "ranks as threads (without mpirun)")
      ->check(in_range(0, 1024));
  app.add_option("--tp", o.train.tp, "tensor-parallel degree (tp, sp, hybrid; 0: derived)")->capture_default_str();
  app.add_option("--pp", o.train.pp, "pipeline stages (pp, mp, hybrid; 0: derived)")->capture_default_str();
  app.add_option("--dp", o.train.dp, "data-parallel degree (hybrid; 0: ranks / (tp x pp))")->capture_default_str();
  app.add_option("--schedule", o.train.schedule, "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1")
      ->capture_default_str();
  app.add_option("--microbatches", o.train.microbatches,
                 "pipeline microbatches per step (0: global batch / (dp x micro-batch), or pp)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 20));
  app.add_option("--virtual-stages", o.train.virtual_stages, "interleaved: model chunks per pipeline rank")
      ->capture_default_str()
      ->check(in_range(1, 1024));
  app.add_option("--dp-scheme", o.train.dp_scheme, "hybrid: ddp, zero1, zero2 or zero3 across data-parallel groups")
      ->capture_default_str();
  app.add_option("--impl", o.train.impl, "collective implementation (auto, mpi, nccl, ring, ...)")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str()
      ->check(at_least(0));
  app.add_option("--optimizer", o.optimizer, "adamw or sgd")->capture_default_str();
  app.add_option("--lr", o.train.adamw.lr, "learning rate")->capture_default_str()
      ->check(greater_than(0));
  app.add_option("--weight-decay", o.train.adamw.weight_decay, "weight decay")->capture_default_str()
      ->check(at_least(0));
  app.add_option("--bucket-mb", o.train.bucket_mb, "ddp bucket size (MiB)")->capture_default_str();
  app.add_flag("--no-overlap", o.no_overlap, "ddp: allreduce after backward instead of during it");
  app.add_option("--sync-every", o.train.sync_every, "localsgd: average parameters every k steps")
      ->capture_default_str();
  app.add_flag("--offload", o.train.offload, "zero1..3: optimizer state and update in host memory");
  app.add_option("--seed", o.train.seed, "seed of parameters and data")->capture_default_str();
  app.add_option("--timeout", o.timeout, "seconds any collective may wait")->capture_default_str()
      ->check(greater_than(0));
  app.add_option("--peak-tflops", o.peak_tflops, "peak TFLOP/s per rank for MFU (0: leave mfu empty)")
      ->check(at_least(0));
  app.add_flag("--pin", o.pin, "bind each rank to core (node-local rank mod cores)");
  app.add_flag("--check", o.check, "compare parameters with a single-rank run on the same global batch");
  app.add_option("--check-tolerance", o.check_tolerance,
                 "with --check: fail (exit 1) when the relative parameter difference exceeds this");
  app.add_option("--profile-steps", o.profile_steps,
                 "A:B: run steps A..B-1 (warm-up counted) inside cudaProfilerStart/Stop for nsys");
  app.add_flag("--estimate-memory", o.estimate_memory, "print the closed-form memory beside the measured peak");
  return run_program(app, argc, argv, [&] { return run(o); });
}
