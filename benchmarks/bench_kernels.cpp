// bench_kernels: every op (forward and backward) and every matmul version at a few GPT-2-like shapes
// on Google Benchmark, on cpu (references), simt (the CUDA kernels on the emulator) or cuda, with
// FLOP/s and bytes/s counters and, on cuda, the percentage of cuBLAS and of the roofline. Each
// benchmark first checks its result against the reference (float64 on cpu) and reports an error
// instead of a time when it is wrong. Times are per call, taken over batches of back-to-back calls.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "app/cli.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/ops.h"
#include "profiles/range.h"
#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace parbench;

namespace {

// GPT-2-like shapes in llm.c notation. By default host devices run the small ones (so a run takes
// seconds) and cuda the GPT-2 ones; --shape picks any of them on any device.
struct GptShape {
  std::string name;
  bool host_default;
  int B, T, C, NH, V;
};
const GptShape kShapes[] = {{"tiny", true, 2, 32, 64, 4, 256},
                            {"small", true, 1, 64, 128, 4, 512},
                            {"gpt2-124M", false, 8, 1024, 768, 12, 50257},
                            {"gpt2-1.5B", false, 4, 1024, 1600, 25, 50257}};

// The shapes to run: the one named by --shape, or the device's defaults when none is named.
std::vector<GptShape> shapes_to_run(const std::string& name, bool cuda) {
  std::vector<GptShape> out;
  std::string accepted;
  for (const auto& s : kShapes) {
    if (name.empty() ? s.host_default != cuda : s.name == name) out.push_back(s);
    accepted += (accepted.empty() ? "" : ", ") + s.name;
  }
  if (out.empty()) throw UsageError("--shape: unknown shape '" + name + "'; accepted: " + accepted);
  return out;
}

// Peak dense throughput and memory bandwidth, for the roofline (dense, from data sheets: docs/MEASUREMENTS.md).
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
  std::map<std::string, double> cublas_seconds;
  std::mt19937_64 rng{12345};
  int failed = 0;  // benchmarks that reported an error (a wrong result or a failure): the exit status says so
  bool cuda() const { return dev.kind == DeviceKind::cuda; }
  DType check_dtype(DType d) const { return dev.kind == DeviceKind::cpu ? DType::f64 : d; }
};

// A tensor on the benchmarked device with its twin on the host for the reference check. On cpu the
// twin is float64 (the check compares the f32/bf16 reference with a float64 run of itself), elsewhere
// it has the device's dtype and the reference runs on cpu.
struct Buf {
  Tensor d, h;
};

class Case {
 public:
  Case(Bench& b, DType dtype) : b_(b), dtype_(dtype) {}
  DType dtype() const { return dtype_; }
  DType acc() const { return DType::f32; }

  Buf in(DType t, Shape shape, double lo = -1, double hi = 1) {
    Buf x = alloc(t, shape);
    Tensor stage(*b_.host_alloc, t, shape, MemCategory::workspace);
    std::uniform_real_distribution<double> u(lo, hi);
    for (std::int64_t i = 0; i < stage.numel(); ++i) store_from_double(stage.data(), t, std::size_t(i), u(b_.rng));
    upload(x, stage);
    return x;
  }
  Buf tokens(Shape shape, int V) {
    Buf x{Tensor(*b_.dev_alloc, DType::i32, shape, MemCategory::activations),
          Tensor(*b_.host_alloc, DType::i32, shape, MemCategory::activations)};
    std::uniform_int_distribution<int> u(0, V - 1);
    for (std::int64_t i = 0; i < x.h.numel(); ++i) x.h.ptr<std::int32_t>()[i] = u(b_.rng);
    device_memcpy(b_.dev, x.d.data(), Device{}, x.h.data(), x.h.bytes());
    return x;
  }
  // An output: NaN on both sides, so an unwritten element fails the check.
  Buf out(DType t, Shape shape) {
    Buf x = alloc(t, shape);
    Tensor stage(*b_.host_alloc, t, shape, MemCategory::workspace);
    for (std::int64_t i = 0; i < stage.numel(); ++i) store_from_double(stage.data(), t, std::size_t(i), NAN);
    upload(x, stage);
    return x;
  }
  // Relative L2 error of the device output against the host reference.
  double error(const Buf& x) const {
    Tensor stage(*b_.host_alloc, x.d.dtype(), x.d.shape(), MemCategory::workspace);
    device_memcpy(Device{}, stage.data(), b_.dev, x.d.data(), x.d.bytes());
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < stage.numel(); ++i) {
      double o = load_as_double(stage.data(), stage.dtype(), std::size_t(i));
      double r = load_as_double(x.h.data(), x.h.dtype(), std::size_t(i));
      if (!std::isfinite(o)) return INFINITY;
      num += (o - r) * (o - r);
      den += r * r;
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }

 private:
  Buf alloc(DType t, const Shape& shape) {
    DType ht = dtype_is_float(t) ? b_.check_dtype(t) : t;
    return {Tensor(*b_.dev_alloc, t, shape, MemCategory::activations),
            Tensor(*b_.host_alloc, ht, shape, MemCategory::activations)};
  }
  void upload(Buf& x, const Tensor& stage) {
    device_memcpy(b_.dev, x.d.data(), Device{}, stage.data(), stage.bytes());
    for (std::int64_t i = 0; i < stage.numel(); ++i)
      store_from_double(x.h.data(), x.h.dtype(), std::size_t(i),
                        load_as_double(stage.data(), stage.dtype(), std::size_t(i)));
  }
  Bench& b_;
  DType dtype_;
};

// What a benchmark runs: `call(device_side, stream)` runs the op on the device tensors (true) or on the
// reference's host tensors (false); `checked` are the outputs compared; flops and bytes are counted work.
struct Work {
  std::function<void(bool, const Stream&)> call;
  std::vector<Buf> checked;
  double flops = 0, bytes = 0;
  double tol = 0;  // 0: the dtype's bound
};
using Factory = std::function<Work(Case&, const GptShape&)>;

// The tensor of a Buf on the side being run (inside a Work's call).
#define SIDE(x) (dev_side ? (x).d : (x).h)
#define CALL(...) [=](bool dev_side, const Stream& st) mutable { __VA_ARGS__; }

// Bounds of the check: f32 against float64 (on cpu) or the f32 reference, over long sums; bf16 outputs
// differ by their rounding.
double tolerance(DType d) { return d == DType::f32 ? 1e-4 : 5e-2; }

void run_benchmark(benchmark::State& state, Bench& b, DType dtype, const GptShape& shape, const Factory& make,
                   const std::string& cublas_key, bool is_cublas) {
  try {
    // The check: once, at the full shape on host devices and at B=1, T<=128 on cuda (a host reference
    // of a full GPT-2 shape would take minutes).
    GptShape cs = shape;
    if (b.cuda()) {
      cs.B = 1;
      cs.T = std::min(cs.T, 128);
    }
    {
      Case c(b, dtype);
      Work w = make(c, cs);
      w.call(true, *b.stream);
      b.stream->synchronize();
      Stream host{Device{}};
      w.call(false, host);
      for (const Buf& x : w.checked) {
        double e = c.error(x);
        double tol = w.tol > 0 ? w.tol : tolerance(dtype);
        if (!(e <= tol)) {
          ++b.failed;
          state.SkipWithError(
              ("wrong result: relative L2 error " + std::to_string(e) + " above " + std::to_string(tol)).c_str());
          return;
        }
      }
    }
    Case c(b, dtype);
    Work w = make(c, shape);
    w.call(true, *b.stream);  // warm-up
    b.stream->synchronize();
    // One timed sample is a batch of `batch` back-to-back calls between one event pair and one host wait:
    // timing each call alone adds its launch and synchronize latency (~7 us on an H100, a quarter of a
    // 30 us layernorm). The batch is sized from one timed call to last about 1 ms; on host devices the
    // calls are synchronous and the same rule only makes fast ops take fewer samples.
    Event start(b.dev), stop(b.dev);
    auto time_batch = [&](std::int64_t calls) {
      PB_RANGE("timed batch", Category::compute, {.chunk = calls});  // NVTX: a tool can count the waits per batch
      start.record(*b.stream);
      for (std::int64_t i = 0; i < calls; ++i) w.call(true, *b.stream);
      stop.record(*b.stream);
      stop.synchronize();
      return Event::elapsed_ms(start, stop) / 1e3;
    };
    // At least two calls, so that even a slow op's sample is back-to-back launches with one wait.
    constexpr double kBatchSeconds = 1e-3;
    constexpr std::int64_t kMinBatch = 2, kMaxBatch = 1000;
    double one = time_batch(1);
    std::int64_t batch = one > 0 ? std::int64_t(std::clamp(std::ceil(kBatchSeconds / one), double(kMinBatch),
                                                           double(kMaxBatch)))
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
    state.counters["batch"] = double(batch);
    state.counters["FLOP/s"] = benchmark::Counter(w.flops, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["bytes/s"] = benchmark::Counter(w.bytes, benchmark::Counter::kIsIterationInvariantRate);
    double peak_tflops = b.peak_tflops_override > 0 ? b.peak_tflops_override
                                                    : (dtype == DType::bf16 ? b.peak.bf16_tflops : b.peak.f32_tflops);
    double peak_gbps = b.peak_gbps_override > 0 ? b.peak_gbps_override : b.peak.gbps;
    if (peak_tflops > 0 && peak_gbps > 0 && per_iter > 0) {
      double bound_s = std::max(w.flops / (peak_tflops * 1e12), w.bytes / (peak_gbps * 1e9));
      state.counters["%roofline"] = 100.0 * bound_s / per_iter;
    }
    // Google Benchmark's CSV output needs the same counters in every run: on cuda each one gets %cuBLAS, NaN
    // where no cuBLAS baseline applies (the non-matmul ops).
    double vs_cublas = std::nan("");
    if (!cublas_key.empty()) {
      if (is_cublas)
        b.cublas_seconds[cublas_key] = per_iter, vs_cublas = 100;
      else if (auto it = b.cublas_seconds.find(cublas_key); it != b.cublas_seconds.end() && per_iter > 0)
        vs_cublas = 100.0 * it->second / per_iter;
    }
    if (b.cuda()) state.counters["%cuBLAS"] = vs_cublas;
  } catch (const std::exception& e) {
    ++b.failed;
    state.SkipWithError(e.what());
  }
}

// ---------------------------------------------------------------- the ops
double esz(DType d) { return double(dtype_size(d)); }

// A matmul of the model: (BT, C) -> (BT, OC).
struct MatmulShape {
  std::string name;
  int C_mult_in, C_mult_out;  // in = C * a, out = C * b (the lm head uses V instead)
};
const MatmulShape kMatmuls[] = {{"qkv", 1, 3}, {"fc", 1, 4}, {"fcproj", 4, 1}};

Factory matmul_forward_factory(const MatmulShape& m, ops::MatmulAlgo algo) {
  return [m, algo](Case& c, const GptShape& s) {
    int BT = s.B * s.T, C = s.C * m.C_mult_in, OC = s.C * m.C_mult_out;
    DType t = c.dtype();
    Buf inp = c.in(t, {BT, C}), w = c.in(t, {OC, C}, -0.2, 0.2), bias = c.in(t, {OC}), out = c.out(t, {BT, OC});
    Work wk{CALL(ops::matmul_forward(SIDE(out), SIDE(inp), SIDE(w), &SIDE(bias), st,
                                     dev_side ? algo : ops::MatmulAlgo::automatic)),
            {out}, 2.0 * BT * C * OC, (double(BT) * C + double(OC) * C + double(BT) * OC + OC) * esz(t)};
    // WMMA rounds fp32 inputs to bf16.
    if (algo == ops::MatmulAlgo::wmma && t == DType::f32) wk.tol = 2e-2;
    return wk;
  };
}

std::vector<std::pair<std::string, Factory>> op_factories() {
  std::vector<std::pair<std::string, Factory>> f;
  f.emplace_back("encoder_forward", [](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.tokens({s.B, s.T}, s.V), wte = c.in(t, {s.V, s.C}), wpe = c.in(t, {s.T, s.C}),
        out = c.out(t, {s.B, s.T, s.C});
    double n = double(s.B) * s.T * s.C;
    return Work{CALL(ops::encoder_forward(SIDE(out), SIDE(inp), SIDE(wte), SIDE(wpe), st)), {out}, n, 3 * n * esz(t)};
  });
  f.emplace_back("encoder_backward", [](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.tokens({s.B, s.T}, s.V), dout = c.in(t, {s.B, s.T, s.C}), dwte = c.in(t, {s.V, s.C}),
        dwpe = c.in(t, {s.T, s.C});
    double n = double(s.B) * s.T * s.C;
    return Work{CALL(ops::encoder_backward(SIDE(dwte), SIDE(dwpe), SIDE(dout), SIDE(inp), st)), {dwte, dwpe}, 2 * n,
                5 * n * esz(t)};
  });
  f.emplace_back("matmul_backward_fc", [](Case& c, const GptShape& s) {
    int BT = s.B * s.T, C = s.C, OC = 4 * s.C;
    DType t = c.dtype();
    Buf inp = c.in(t, {BT, C}), w = c.in(t, {OC, C}, -0.2, 0.2), dout = c.in(t, {BT, OC}, -0.2, 0.2);
    Buf dinp = c.out(t, {BT, C}), dw = c.out(t, {OC, C}), db = c.out(t, {OC});
    return Work{CALL(ops::matmul_backward(&SIDE(dinp), &SIDE(dw), &SIDE(db), SIDE(dout), SIDE(inp), SIDE(w), false, st)),
                {dinp, dw, db}, 4.0 * BT * C * OC + double(BT) * OC,
                (2.0 * BT * C + 2.0 * OC * C + 2.0 * BT * OC + OC) * esz(t)};
  });
  f.emplace_back("gelu_forward", [](Case& c, const GptShape& s) {
    Buf inp = c.in(c.dtype(), {s.B, s.T, 4 * s.C}, -3, 3), out = c.out(c.dtype(), {s.B, s.T, 4 * s.C});
    double n = 4.0 * s.B * s.T * s.C;
    return Work{CALL(ops::gelu_forward(SIDE(out), SIDE(inp), st)), {out}, 9 * n, 2 * n * esz(c.dtype())};
  });
  f.emplace_back("gelu_backward", [](Case& c, const GptShape& s) {
    Buf inp = c.in(c.dtype(), {s.B, s.T, 4 * s.C}, -3, 3), dout = c.in(c.dtype(), {s.B, s.T, 4 * s.C}),
        dinp = c.out(c.dtype(), {s.B, s.T, 4 * s.C});
    double n = 4.0 * s.B * s.T * s.C;
    return Work{CALL(ops::gelu_backward(SIDE(dinp), SIDE(inp), SIDE(dout), st)), {dinp}, 16 * n, 3 * n * esz(c.dtype())};
  });
  f.emplace_back("bias_gelu_forward", [](Case& c, const GptShape& s) {
    Buf inp = c.in(c.dtype(), {s.B * s.T, 4 * s.C}, -3, 3), bias = c.in(c.dtype(), {4 * s.C}),
        out = c.out(c.dtype(), {s.B * s.T, 4 * s.C});
    double n = 4.0 * s.B * s.T * s.C;
    return Work{CALL(ops::bias_gelu_forward(SIDE(out), SIDE(inp), SIDE(bias), st)), {out}, 10 * n,
                2 * n * esz(c.dtype())};
  });
  f.emplace_back("bias_gelu_backward", [](Case& c, const GptShape& s) {
    Buf inp = c.in(c.dtype(), {s.B * s.T, 4 * s.C}, -3, 3), bias = c.in(c.dtype(), {4 * s.C}),
        dout = c.in(c.dtype(), {s.B * s.T, 4 * s.C}), dinp = c.out(c.dtype(), {s.B * s.T, 4 * s.C}),
        dbias = c.in(c.dtype(), {4 * s.C});
    double n = 4.0 * s.B * s.T * s.C;
    return Work{CALL(ops::bias_gelu_backward(SIDE(dinp), &SIDE(dbias), SIDE(inp), SIDE(bias), SIDE(dout), st)),
                {dinp, dbias}, 18 * n, 4 * n * esz(c.dtype())};
  });
  f.emplace_back("layernorm_forward", [](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), bias = c.in(t, {s.C}), out = c.out(t, {s.B, s.T, s.C}),
        mean = c.out(c.acc(), {s.B, s.T}), rstd = c.out(c.acc(), {s.B, s.T});
    double n = double(s.B) * s.T * s.C;
    return Work{CALL(ops::layernorm_forward(SIDE(out), SIDE(mean), SIDE(rstd), SIDE(inp), SIDE(w), SIDE(bias), st)),
                {out, mean, rstd}, 8 * n, 3 * n * esz(t)};
  });
  f.emplace_back("layernorm_backward", [](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.in(t, {s.B, s.T, s.C}, -2, 2), w = c.in(t, {s.C}), mean = c.in(c.acc(), {s.B, s.T}, -0.1, 0.1),
        rstd = c.in(c.acc(), {s.B, s.T}, 0.5, 1.5), dout = c.in(t, {s.B, s.T, s.C}), dinp = c.in(t, {s.B, s.T, s.C}),
        dw = c.in(t, {s.C}), db = c.in(t, {s.C});
    double n = double(s.B) * s.T * s.C;
    return Work{CALL(ops::layernorm_backward(SIDE(dinp), SIDE(dw), SIDE(db), SIDE(dout), SIDE(inp), SIDE(w), SIDE(mean),
                                             SIDE(rstd), st)),
                {dinp, dw, db}, 16 * n, 6 * n * esz(t)};
  });
  f.emplace_back("residual_forward", [](Case& c, const GptShape& s) {
    Buf a = c.in(c.dtype(), {s.B, s.T, s.C}), b = c.in(c.dtype(), {s.B, s.T, s.C}), out = c.out(c.dtype(), {s.B, s.T, s.C});
    double n = double(s.B) * s.T * s.C;
    return Work{CALL(ops::residual_forward(SIDE(out), SIDE(a), SIDE(b), st)), {out}, n, 3 * n * esz(c.dtype())};
  });
  f.emplace_back("residual_backward", [](Case& c, const GptShape& s) {
    Buf da = c.in(c.dtype(), {s.B, s.T, s.C}), db = c.in(c.dtype(), {s.B, s.T, s.C}), dout = c.in(c.dtype(), {s.B, s.T, s.C});
    double n = double(s.B) * s.T * s.C;
    return Work{CALL(ops::residual_backward(SIDE(da), SIDE(db), SIDE(dout), st)), {da, db}, 2 * n, 5 * n * esz(c.dtype())};
  });
  // Causal attention work: QK^T and PV over the lower triangle.
  auto attn_flops = [](const GptShape& s) { return 2.0 * 2.0 * s.B * s.NH * (s.T * (s.T + 1.0) / 2) * (s.C / s.NH); };
  f.emplace_back("attention_forward", [attn_flops](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}), att = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
    double io = 4.0 * s.B * s.T * s.C * esz(t), scores = double(s.B) * s.NH * s.T * s.T * 4;
    return Work{CALL(ops::attention_forward(SIDE(out), SIDE(att), SIDE(inp), s.NH, st)), {out, att}, attn_flops(s),
                io + 3 * scores};
  });
  f.emplace_back("attention_backward", [attn_flops](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}), att = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
    Buf dout = c.in(t, {s.B, s.T, s.C}), dinp = c.out(t, {s.B, s.T, 3 * s.C}), scratch = c.out(c.acc(), {s.B, s.NH, s.T, s.T});
    bool forward_done[2] = {false, false};  // the forward runs once per side (in the check or the warm-up)
    double io = 7.0 * s.B * s.T * s.C * esz(t), scores = double(s.B) * s.NH * s.T * s.T * 4;
    return Work{CALL(if (!forward_done[dev_side]) ops::attention_forward(SIDE(out), SIDE(att), SIDE(inp), s.NH, st);
                     forward_done[dev_side] = true;
                     ops::attention_backward(SIDE(dinp), SIDE(scratch), SIDE(dout), SIDE(inp), SIDE(att), s.NH, st)),
                {dinp}, 2 * attn_flops(s), io + 5 * scores};
  });
  f.emplace_back("flash_attention_forward", [attn_flops](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}), lse = c.out(c.acc(), {s.B, s.NH, s.T});
    return Work{CALL(ops::flash_attention_forward(SIDE(out), SIDE(lse), SIDE(inp), s.NH, st)), {out, lse},
                attn_flops(s), 4.0 * s.B * s.T * s.C * esz(t)};
  });
  f.emplace_back("flash_attention_backward", [attn_flops](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf inp = c.in(t, {s.B, s.T, 3 * s.C}, -1, 1), out = c.out(t, {s.B, s.T, s.C}), lse = c.out(c.acc(), {s.B, s.NH, s.T});
    Buf dout = c.in(t, {s.B, s.T, s.C}), dinp = c.out(t, {s.B, s.T, 3 * s.C}), scratch = c.out(c.acc(), {s.B, s.NH, s.T});
    bool forward_done[2] = {false, false};
    return Work{CALL(if (!forward_done[dev_side]) ops::flash_attention_forward(SIDE(out), SIDE(lse), SIDE(inp), s.NH, st);
                     forward_done[dev_side] = true;
                     ops::flash_attention_backward(SIDE(dinp), SIDE(scratch), SIDE(dout), SIDE(inp), SIDE(out), SIDE(lse),
                                                   s.NH, st)),
                {dinp}, 3.5 * attn_flops(s), 12.0 * s.B * s.T * s.C * esz(t)};
  });
  f.emplace_back("crossentropy_forward_backward", [](Case& c, const GptShape& s) {
    DType t = c.dtype();
    Buf logits = c.in(t, {s.B * s.T, s.V}, -3, 3), targets = c.tokens({s.B * s.T}, s.V), losses = c.out(c.acc(), {s.B * s.T}),
        dlogits = c.out(t, {s.B * s.T, s.V});
    double n = double(s.B) * s.T * s.V;
    return Work{CALL(ops::crossentropy_forward_backward(SIDE(losses), &SIDE(dlogits), SIDE(logits), SIDE(targets),
                                                        1.f / float(s.B * s.T), st)),
                {losses, dlogits}, 6 * n, 3 * n * esz(t)};
  });
  // Optimizer-side ops over one transformer block's parameters (12 C^2).
  f.emplace_back("adamw_update", [](Case& c, const GptShape& s) {
    std::int64_t n = 12LL * s.C * s.C;
    Buf p = c.in(c.dtype(), {n}), g = c.in(c.dtype(), {n}), m = c.in(c.acc(), {n}, -0.1, 0.1), v = c.in(c.acc(), {n}, 0, 0.1);
    ops::AdamWConfig cfg{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    return Work{CALL(ops::adamw_update(SIDE(p), SIDE(g), SIDE(m), SIDE(v), cfg, 1, st)), {p, m, v}, 12.0 * n,
                n * (3 * esz(c.dtype()) + 16)};
  });
  f.emplace_back("sgd_update", [](Case& c, const GptShape& s) {
    std::int64_t n = 12LL * s.C * s.C;
    Buf p = c.in(c.dtype(), {n}), g = c.in(c.dtype(), {n});
    return Work{CALL(ops::sgd_update(SIDE(p), SIDE(g), 1e-2f, 0.01f, st)), {p}, 4.0 * n, 3.0 * n * esz(c.dtype())};
  });
  f.emplace_back("norm_squared", [](Case& c, const GptShape& s) {
    std::int64_t n = 12LL * s.C * s.C;
    Buf g = c.in(c.dtype(), {n}), out = c.out(c.acc(), {1});
    return Work{CALL(ops::norm_squared(SIDE(out), SIDE(g), false, st)), {out}, 2.0 * n, double(n) * esz(c.dtype())};
  });
  f.emplace_back("clip_by_norm", [](Case& c, const GptShape& s) {
    std::int64_t n = 12LL * s.C * s.C;
    Buf g = c.in(c.dtype(), {n}), ns = c.in(c.acc(), {1}, 4, 5);
    return Work{CALL(ops::clip_by_norm(SIDE(g), SIDE(ns), 1.f, st)), {g}, 1.0 * n, 2.0 * n * esz(c.dtype())};
  });
  f.emplace_back("mse_forward", [](Case& c, const GptShape& s) {
    std::int64_t n = std::int64_t(s.B) * s.T * s.C;
    Buf p = c.in(c.dtype(), {n}), y = c.in(c.dtype(), {n}), loss = c.out(c.acc(), {1});
    return Work{CALL(ops::mse_forward(SIDE(loss), SIDE(p), SIDE(y), st)), {loss}, 3.0 * n, 2.0 * n * esz(c.dtype())};
  });
  f.emplace_back("mse_backward", [](Case& c, const GptShape& s) {
    std::int64_t n = std::int64_t(s.B) * s.T * s.C;
    Buf p = c.in(c.dtype(), {n}), y = c.in(c.dtype(), {n}), dp = c.out(c.dtype(), {n});
    return Work{CALL(ops::mse_backward(SIDE(dp), SIDE(p), SIDE(y), 1.f, st)), {dp}, 3.0 * n, 3.0 * n * esz(c.dtype())};
  });
  return f;
}

// f32 <-> bf16 conversion, registered once per shape (its dtype is both).
Factory convert_factory() {
  return [](Case& c, const GptShape& s) {
    std::int64_t n = std::int64_t(s.B) * s.T * s.C;
    Buf x = c.in(DType::f32, {n}), h = c.out(DType::bf16, {n}), back = c.out(DType::f32, {n});
    // The host side (float64 on cpu) rounds each value through bf16 directly.
    return Work{CALL(if (dev_side) {
                  ops::convert(h.d, x.d, st);
                  ops::convert(back.d, h.d, st);
                } else {
                  for (std::int64_t i = 0; i < n; ++i) {
                    float v = float(load_as_double(x.h.data(), x.h.dtype(), std::size_t(i)));
                    store_from_double(back.h.data(), back.h.dtype(), std::size_t(i), bf16_to_float(float_to_bf16(v)));
                  }
                }),
                {back}, 0.0, 12.0 * n, 1e-30};
  };
}

#undef CALL
#undef SIDE

struct Options {
  CommonOptions common;
  std::vector<std::string> dtypes{"f32", "bf16"};
  std::string filter_shapes;
  double peak_tflops = 0, peak_gbps = 0;
  double min_time = 0;
};

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

int run(Bench& b, const Options& o, int argc, char** argv) {
  std::string why;
  b.dev = resolve_device(o.common.device, &why);
  if (!why.empty() && !o.common.quiet) std::cerr << why << "\n";
  if (!ops::kernels_available(b.dev.kind))
    throw UsageError("--device " + o.common.device + ": this build has no kernels for " + device_name(b.dev));
  b.stream = std::make_unique<Stream>(b.dev, b.cuda());
  b.dev_alloc = std::make_unique<TrackedAllocator>(b.dev);
  b.host_alloc = std::make_unique<TrackedAllocator>(Device{});
  b.peak = detect_peak(b.dev);
  b.peak_tflops_override = o.peak_tflops;
  b.peak_gbps_override = o.peak_gbps;
  double min_time = o.min_time > 0 ? o.min_time : (b.cuda() ? 0.5 : 0.05);
  const auto shapes = shapes_to_run(o.filter_shapes, b.cuda());
  auto ops_list = op_factories();
  std::string dev_name = device_name(b.dev);
  auto add = [&](const std::string& name, DType dt, const GptShape& shape, Factory f, std::string key, bool is_cublas) {
    auto* bm = benchmark::RegisterBenchmark(name.c_str(), [&b, dt, shape, f, key, is_cublas](benchmark::State& st) {
      run_benchmark(st, b, dt, shape, f, key, is_cublas);
    });
    bm->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(min_time);
  };
  for (const auto& shape : shapes) {
    for (const auto& dname : o.dtypes) {
      DType dt = parse_dtype(dname);
      if (dt != DType::f32 && dt != DType::bf16) throw UsageError("--dtype " + dname + " is not f32 or bf16");
      std::string tail = "/" + dev_name + "/" + std::string(dtype_name(dt)) + "/" + shape.name;
      for (const auto& m : kMatmuls) {
        std::string key = m.name + tail;
        if (b.cuda()) add("matmul_forward_" + m.name + "/cublas" + tail, dt, shape,
                          matmul_forward_factory(m, ops::MatmulAlgo::cublas), key, true);
        // The cpu runs the reference whatever the version: one entry is enough there.
        for (int v = 1; v <= (b.dev.kind == DeviceKind::cpu ? 1 : 4); ++v) {
          auto algo = b.dev.kind == DeviceKind::cpu ? ops::MatmulAlgo::automatic : ops::MatmulAlgo(v);
          std::string vname = b.dev.kind == DeviceKind::cpu ? "reference" : std::string(ops::matmul_algo_name(algo));
          add("matmul_forward_" + m.name + "/" + vname + tail, dt, shape,
              matmul_forward_factory(m, algo), key, false);
        }
      }
      for (const auto& [name, f] : ops_list) add(name + tail, dt, shape, f, "", false);
    }
    add("convert_f32_bf16_roundtrip/" + dev_name + "/f32/" + shape.name, DType::f32, shape, convert_factory(), "", false);
  }
  (void)argc;
  (void)argv;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (b.failed > 0) {
    std::cerr << "bench_kernels: " << b.failed << " benchmark(s) reported an error (see error_message above)\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // --csv FILE / --json FILE become Google Benchmark's file output; its own --benchmark_* flags are
  // taken out of argv by benchmark::Initialize before our options are parsed.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> extra;
  for (std::size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "--csv" || args[i] == "--json") {
      extra.push_back("--benchmark_out=" + args[i + 1]);
      extra.push_back(std::string("--benchmark_out_format=") + (args[i] == "--csv" ? "csv" : "json"));
    }
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  for (auto& a : extra) av.push_back(a.data());
  int ac = int(av.size());
  av.push_back(nullptr);
  benchmark::Initialize(&ac, av.data());

  CLI::App app{"bench_kernels: hand-written CUDA kernels for MLP and transformer layers vs references and cuBLAS.\n"
               "Google Benchmark's flags (--benchmark_filter, --benchmark_format=csv|json, ...) work too.",
               "bench_kernels"};
  Options o;
  add_common_options(app, o.common);
  app.add_option("--dtype", o.dtypes, "storage dtypes to run: f32, bf16")->delimiter(',');
  app.add_option("--shape", o.filter_shapes,
                 "run only this shape: tiny, small, gpt2-124M or gpt2-1.5B, on any device (default: tiny and small "
                 "on cpu and simt, the gpt2 ones on cuda)");
  app.add_option("--peak-tflops", o.peak_tflops, "peak TFLOP/s for the roofline (default: device table)")
      ->check(CLI::PositiveNumber);
  app.add_option("--peak-gbps", o.peak_gbps, "peak memory GB/s for the roofline (default: device table)")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-time", o.min_time, "seconds per benchmark (default 0.05 on host devices, 0.5 on cuda)")
      ->check(CLI::PositiveNumber);
  Bench b;
  return run_program(app, ac, av.data(), [&] { return run(b, o, ac, av.data()); });
}
