// bench_kernels: every entry of the op table (kernels/op_table.h: every op forward and backward, every matmul
// version) at a few GPT-2-like shapes on Google Benchmark, on cpu (references), simt (the CUDA kernels on the emulator)
// or cuda, with FLOP/s and bytes/s counters and, on cuda, the percentage of cuBLAS and of the roofline. Each benchmark
// first checks its result against the reference (float64 on cpu) and reports an error instead of a time when it is
// wrong. Times are per call, taken over batches of back-to-back calls. --linear TOKENSxINxOUT,... times linear layers
// of any widths instead (forward, input gradient and weight gradient each; the predictor's measured linears).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "app/program.h"
#include "app/interrupt.h"
#include "benchmarks/kernels_bench/memory.h"
#include "benchmarks/kernels_bench/options.h"
#include "benchmarks/kernels_bench/rows.h"
#include "base/error.h"
#include "core/csv_columns.h"
#include "core/current_stream.h"
#include "core/memory.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "base/text.h"
#include "kernels/op_table.h"
#include "kernels/ops.h"
#include "profiles/range.h"
#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace parbench;

namespace {

using optable::Arg;
using optable::OpCase;
using optable::OpShape;
using optable::Work;
using kernels_bench::GptShape;
using kernels_bench::Options;

// Peak dense throughput and memory bandwidth, for the roofline (dense, from data sheets: docs/metrics.md).
struct Peak {
  double bf16_tflops, f32_tflops, gbps;
};
struct PeakEntry {
  const char* name;
  Peak peak;
};
const PeakEntry kPeaks[] = {{"A100", {312, 19.5, 2039}}, {"H100", {989, 67, 3350}}, {"H200", {989, 67, 4800}}};

// The run's one context: device, stream, allocators, peaks, and the cuBLAS times by shape key.
struct Bench {
  Device dev;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<TrackedAllocator> dev_alloc, host_alloc;
  double peak_tflops_override = 0, peak_gbps_override = 0;
  Peak peak{0, 0, 0};
  std::map<std::string, double> cublas_seconds, cublaslt_seconds;
  std::mt19937_64 rng{12345};
  int failed = 0;  // benchmarks that reported an error (a wrong result or a failure): the exit status says so
  bool cuda() const { return dev.kind == DeviceKind::cuda; }
};

// The two sides of a benchmark: the benchmarked device (0) and the reference's host twin (1), float64 on cpu (the
// check compares the f32/bf16 reference with a float64 run of itself), else of the device's dtypes with the
// reference run on cpu.
constexpr int kDeviceSide = 0, kHostSide = 1;
OpCase make_case(Bench& b, DType dtype, ops::MatmulAlgo algo) {
  return OpCase({{b.dev, b.dev_alloc.get()}, {Device{}, b.host_alloc.get(), b.dev.kind == DeviceKind::cpu}}, dtype,
                b.rng, algo);
}

// A --linear benchmark instead of a table entry: one part of one linear layer.
struct LinearSpec {
  kernels_bench::LinearShape shape;
  optable::LinearPart part;
};

// One benchmark: a table entry at a dtype and shape, with its matmul version and the key of the cuBLAS and cuBLASLt
// times it is compared with (matmul forwards only); or a --linear part.
struct Spec {
  const optable::OpEntry* entry;
  DType dtype;
  GptShape shape;
  ops::MatmulAlgo algo = ops::MatmulAlgo::automatic;
  std::string cublas_key{};
  bool is_cublas = false, is_cublaslt = false;
  std::optional<LinearSpec> linear{};
};

// The benchmark's workload; for the check on cuda at B=1, T<=128 (a linear: the same call at most 64 tokens and 512
// features in and out), since a host reference of a full GPT-2 shape, or of a published model's linear, would take
// minutes (a linear part's host reference then does at most 2 x 64 x 512 x 512 FLOPs).
Work make_work(Bench& b, OpCase& c, const Spec& sp, bool for_check) {
  const bool small = for_check && b.cuda();
  if (sp.linear) {
    const kernels_bench::LinearShape& l = sp.linear->shape;
    // The GEMM alone: a bias (and its fusion) is elementwise work, which the predictor counts apart.
    if (!small) return optable::linear_workload(c, l.tokens, l.in, l.out, sp.linear->part, false);
    return optable::linear_workload(c, std::min(l.tokens, 64), std::min(l.in, 512), std::min(l.out, 512),
                                    sp.linear->part, false);
  }
  OpShape s = sp.shape.dims;
  if (small) s.B = 1, s.T = std::min(s.T, 128);
  return sp.entry->make(c, s);
}

// The check, once before the timing (at the full shape on host devices). Returns what is wrong, or nothing.
std::string check_result(Bench& b, const Spec& sp) {
  OpCase c = make_case(b, sp.dtype, sp.algo);
  Work w = make_work(b, c, sp, true);
  w.call(kDeviceSide, *b.stream);
  b.stream->synchronize();
  Stream host{Device{}};
  w.call(kHostSide, host);
  for (const Arg& x : w.checked) {
    double e = optable::rel_l2(x[kDeviceSide], x[kHostSide]);
    double tol = w.tol > 0 ? w.tol : optable::default_tolerance(sp.dtype);
    if (!(e <= tol)) return "wrong result: relative L2 error " + std::to_string(e) + " above " + std::to_string(tol);
  }
  return "";
}

void time_benchmark(benchmark::State& state, Bench& b, const Spec& sp) {
  // The device side alone: the timing never calls the host twin (a published model's linear holds a billion
  // elements on each side).
  OpCase c({{b.dev, b.dev_alloc.get()}}, sp.dtype, b.rng, sp.algo);
  Work w = make_work(b, c, sp, false);
  w.call(kDeviceSide, *b.stream);  // warm-up
  b.stream->synchronize();
  // One timed sample is a batch of `batch` back-to-back calls between one event pair and one host wait:
  // timing each call alone adds its launch and synchronize latency (~7 us on an H100, a quarter of a
  // 30 us layernorm). The batch is sized from one timed call to last about 1 ms; on host devices the
  // calls are synchronous and the same rule only makes fast ops take fewer samples.
  Event start(b.dev), stop(b.dev);
  auto time_batch = [&](std::int64_t calls) {
    PB_RANGE("timed batch", Category::compute, {.chunk = calls});  // NVTX: a tool can count the waits per batch
    start.record(*b.stream);
    for (std::int64_t i = 0; i < calls; ++i) w.call(kDeviceSide, *b.stream);
    stop.record(*b.stream);
    stop.synchronize();
    return Event::elapsed_ms(start, stop) / 1e3;
  };
  // At least two calls, so that even a slow op's sample is back-to-back launches with one wait.
  constexpr double kBatchSeconds = 1e-3;
  constexpr std::int64_t kMinBatch = 2, kMaxBatch = 1000;
  double one = time_batch(1);
  std::int64_t batch =
      one > 0 ? std::int64_t(std::clamp(std::ceil(kBatchSeconds / one), double(kMinBatch), double(kMaxBatch)))
              : kMaxBatch;
  // KeepRunningBatch counts each batch as `batch` iterations and SetIterationTime takes the batch's time,
  // so Google Benchmark's time per iteration, the iteration-invariant rates below and --min-time are all
  // per call (with `for (auto _ : state)` and the batch time over `batch`, --min-time would stretch
  // `batch`-fold).
  double total_s = 0;
  while (state.KeepRunningBatch(batch)) {
    double sec = time_batch(batch);
    total_s += sec;
    state.SetIterationTime(sec);
  }
  double per_iter = total_s / double(std::max<std::int64_t>(state.iterations(), 1));
  state.counters[csv::kernels::batch] = double(batch);
  state.counters[csv::kernels::counter_flops] =
      benchmark::Counter(w.flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters[csv::kernels::counter_bytes] =
      benchmark::Counter(w.bytes, benchmark::Counter::kIsIterationInvariantRate);
  double peak_tflops = b.peak_tflops_override > 0 ? b.peak_tflops_override
                                                  : (sp.dtype == DType::bf16 ? b.peak.bf16_tflops : b.peak.f32_tflops);
  double peak_gbps = b.peak_gbps_override > 0 ? b.peak_gbps_override : b.peak.gbps;
  if (peak_tflops > 0 && peak_gbps > 0 && per_iter > 0) {
    double bound_s = std::max(w.flops / (peak_tflops * 1e12), w.bytes / (peak_gbps * 1e9));
    state.counters[csv::kernels::counter_roofline] = 100.0 * bound_s / per_iter;
  }
  // Google Benchmark's CSV output needs the same counters in every run: on cuda each one gets %cuBLAS and
  // %cuBLASLt, NaN where no such baseline applies (the non-matmul ops).
  auto vs = [&](std::map<std::string, double>& seconds, bool is_baseline) {
    if (sp.cublas_key.empty()) return std::nan("");
    if (is_baseline) seconds[sp.cublas_key] = per_iter;
    auto it = seconds.find(sp.cublas_key);
    return it != seconds.end() && per_iter > 0 ? 100.0 * it->second / per_iter : std::nan("");
  };
  if (b.cuda()) {
    state.counters[csv::kernels::counter_cublas] = vs(b.cublas_seconds, sp.is_cublas);
    state.counters[csv::kernels::counter_cublaslt] = vs(b.cublaslt_seconds, sp.is_cublaslt);
  }
}

void run_benchmark(benchmark::State& state, Bench& b, const Spec& sp) {
  try {
    if (std::string wrong = check_result(b, sp); !wrong.empty()) {
      ++b.failed;
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_benchmark(state, b, sp);
  } catch (const std::exception& e) {
    ++b.failed;
    state.SkipWithError(e.what());
  }
}

Peak detect_peak(const Device& dev) {
#ifdef PARBENCH_HAVE_CUDA
  if (dev.kind == DeviceKind::cuda) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, dev.index) == cudaSuccess)
      for (const auto& e : kPeaks)
        if (std::string(prop.name).find(e.name) != std::string::npos) return e.peak;
  }
#endif
  (void)dev;
  return {0, 0, 0};
}

// Registers the run's benchmarks with Google Benchmark: each --linear's three parts, or every table entry at each
// shape and dtype (a matmul forward per version), leaving out what --resume finds done.
void register_benchmarks(Bench& b, const Options& o, KernelRowsReporter& reporter,
                         const std::vector<kernels_bench::LinearShape>& linears, const std::vector<GptShape>& shapes,
                         const std::vector<DType>& dtypes) {
  double min_time = o.min_time > 0 ? o.min_time : (b.cuda() ? 0.5 : 0.05);
  std::string dev_name = device_name(b.dev);
  auto add = [&](const std::string& name, const Spec& sp) {
    if (reporter.done(name)) return;  // --resume
    auto* bm = benchmark::RegisterBenchmark(name.c_str(), [&b, sp](benchmark::State& st) { run_benchmark(st, b, sp); });
    bm->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(min_time);
  };
  // A matmul forward (`base`: a table entry at a shape, or a --linear's forward) once per version (the cpu runs the
  // reference whatever the version: one entry is enough there), after cuBLAS and cuBLASLt on cuda.
  auto add_matmul_versions = [&](const std::string& op, Spec base, const std::string& tail) {
    base.cublas_key = op + tail;
    auto version = [&](ops::MatmulAlgo algo, bool is_cublas, bool is_cublaslt) {
      Spec sp = base;
      sp.algo = algo, sp.is_cublas = is_cublas, sp.is_cublaslt = is_cublaslt;
      return sp;
    };
    if (b.cuda()) add(op + "/cublas" + tail, version(ops::MatmulAlgo::cublas, true, false));
    if (b.cuda()) add(op + "/cublaslt" + tail, version(ops::MatmulAlgo::cublaslt, false, true));
    bool cpu = b.dev.kind == DeviceKind::cpu;
    for (int v = 1; v <= (cpu ? 1 : 5); ++v) {
      auto algo = cpu ? ops::MatmulAlgo::automatic : ops::MatmulAlgo(v);
      std::string vname = cpu ? "reference" : std::string(ops::matmul_algo_name(algo));
      add(op + "/" + vname + tail, version(algo, false, false));
    }
  };
  // A gradient of a --linear: on cuda cuBLAS's GEMM first, then the device's default kernels (with %cuBLAS).
  auto add_gradient = [&](const std::string& op, Spec base, const std::string& tail) {
    if (b.cuda()) {
      base.cublas_key = op + tail;
      Spec vendor = base;
      vendor.algo = ops::MatmulAlgo::cublas, vendor.is_cublas = true;
      add(op + "/cublas" + tail, vendor);
    }
    add(op + tail, base);
  };
  // --linear: each linear's forward (per version, as the table's matmul forwards), input gradient and weight
  // gradient.
  for (const auto& l : linears)
    for (DType dt : dtypes) {
      const std::string tail = "/" + dev_name + "/" + std::string(dtype_name(dt)) + "/" + l.name();
      auto part = [&](optable::LinearPart p) {
        return Spec{.entry = nullptr, .dtype = dt, .shape = {}, .linear = LinearSpec{l, p}};
      };
      using optable::LinearPart;
      using optable::linear_row_name;
      add_matmul_versions(std::string(linear_row_name(LinearPart::forward)), part(LinearPart::forward), tail);
      add_gradient(std::string(linear_row_name(LinearPart::input_gradient)), part(LinearPart::input_gradient), tail);
      add_gradient(std::string(linear_row_name(LinearPart::weight_gradient)), part(LinearPart::weight_gradient), tail);
    }
  for (const auto& shape : shapes) {
    for (DType dt : dtypes) {
      std::string tail = "/" + dev_name + "/" + std::string(dtype_name(dt)) + "/" + shape.name;
      for (const auto& e : optable::op_table()) {
        if (e.kind == optable::OpKind::matmul_versions)
          add_matmul_versions(e.name, {.entry = &e, .dtype = dt, .shape = shape}, tail);
        if (e.kind == optable::OpKind::per_dtype) add(e.name + tail, {.entry = &e, .dtype = dt, .shape = shape});
      }
    }
    for (const auto& e : optable::op_table())  // its dtypes fixed: once per shape, named as f32
      if (e.kind == optable::OpKind::fixed_dtype)
        add(e.name + "/" + dev_name + "/f32/" + shape.name, {.entry = &e, .dtype = DType::f32, .shape = shape});
  }
}

// --list-ops: the table's rows, for scripts that pick bench_kernels rows by what they are rather than by name.
void list_ops() {
  std::cout << "name,kind,backward,forward_of,cost,k,per_block\n";
  for (const optable::OpRow& r : optable::op_rows()) {
    const char* kind = r.kind == optable::OpKind::matmul_versions ? "matmul_versions"
                       : r.kind == optable::OpKind::fixed_dtype   ? "fixed_dtype"
                                                                  : "per_dtype";
    std::cout << r.name << "," << kind << "," << r.pair.backward << "," << r.pair.forward_of << ","
              << optable::cost_role_name(r.cost.role) << "," << r.cost.k << "," << r.cost.per_block << "\n";
  }
  // --linear's rows: kind linear, the part of the layer in the cost column.
  using optable::LinearPart;
  for (LinearPart p : {LinearPart::forward, LinearPart::input_gradient, LinearPart::weight_gradient}) {
    const std::string_view name = optable::linear_row_name(p);
    std::cout << name << ",linear,,," << name.substr(name.find('_') + 1) << ",,1\n";
  }
}

int run(Bench& b, const Options& o, int argc, char** argv) {
  if (o.list_ops) {
    list_ops();
    return 0;
  }
  check_output_paths({{"--csv", o.common.csv}, {"--json", o.common.json}, {"--trace", o.common.trace}});
  if (o.resume && o.common.csv.empty()) throw UsageError("--resume needs --csv FILE: the benchmarks to skip are its rows");
  KernelRowsReporter reporter(o.common.csv, o.common.json, o.resume);
  install_stop_handlers("bench_kernels: stopped at once by a second SIGNAL" +
                        (o.common.csv.empty() ? std::string() : "; completed rows are in " + o.common.csv));
  std::string why;
  b.dev = resolve_device(o.common.device, &why);
  if (!why.empty() && !o.common.quiet) std::cerr << why << "\n";
  if (!ops::kernels_available(b.dev.kind))
    throw UsageError("--device " + o.common.device + ": this build has no kernels for " + device_name(b.dev));
  const auto linears = kernels_bench::parse_linears(o.linears);
  if (!linears.empty() && !o.filter_shapes.empty()) throw UsageError("--linear and --shape exclude each other");
  const auto shapes = linears.empty() ? kernels_bench::shapes_to_run(o.filter_shapes, b.cuda()) : std::vector<GptShape>{};
  const auto dtypes = kernels_bench::checked_dtypes(o);
  std::vector<optable::OpShape> dims;
  for (const auto& s : shapes) dims.push_back(s.dims);
  check_memory_fits("bench_kernels' largest workload (closed form)",
                    std::max(kernels_bench::memory_need(dims, dtypes, b.dev),
                             kernels_bench::memory_need(linears, dtypes, b.dev)),
                    b.dev, kernels_bench::max_memory_bytes(o), 1, "use a smaller --shape or --linear");
  b.stream = std::make_unique<Stream>(b.dev, b.cuda());
  // The stream is non-blocking: the inputs' and results' synchronous copies run on it too (core/stream.h's
  // synchronous_stream), ordered with the kernels, and the pool's blocks belong to it.
  const CurrentStream on_stream(b.stream->native());
  b.dev_alloc = std::make_unique<TrackedAllocator>(b.dev);
  b.host_alloc = std::make_unique<TrackedAllocator>(Device{});
  b.peak = detect_peak(b.dev);
  b.peak_tflops_override = o.peak_tflops;
  b.peak_gbps_override = o.peak_gbps;
  register_benchmarks(b, o, reporter, linears, shapes, dtypes);
  (void)argc;
  (void)argv;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (b.failed > 0) {
    std::cerr << "bench_kernels: " << b.failed << " benchmark(s) reported an error (see error_message above)\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Google Benchmark's own --benchmark_* flags are taken out of argv by benchmark::Initialize before our options
  // are parsed; --csv and --json are ours (kernels_bench/rows.h: a row per finished benchmark).
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  int ac = int(av.size());
  av.push_back(nullptr);
  // --help is ours (its first lines name Google Benchmark's flags): benchmark::Initialize would print its own usage
  // and exit before our options were listed.
  const bool help =
      std::any_of(args.begin() + 1, args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
  if (!help) benchmark::Initialize(&ac, av.data());

  Options o;
  Bench b;
  return run_program({"bench_kernels: hand-written CUDA kernels for MLP and transformer layers vs references and "
                      "cuBLAS.\nGoogle Benchmark's flags (--benchmark_filter, --benchmark_format=csv|json, ...) work "
                      "too.",
                      "bench_kernels"},
                     [&](CLI::App& app) { kernels_bench::add_options(app, o); }, ac, av.data(),
                     [&](const CLI::App&) { return run(b, o, ac, av.data()); });
}
