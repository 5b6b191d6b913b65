// Calibration from our own measurements: alpha (latency) and beta (seconds per byte) of a link fitted to the rows of
// bench_<collective> CSVs, with the fit's error, per (collective, implementation, ranks).
#pragma once
#include <string>
#include <vector>

#include "predict/system.h"

namespace parbench::predict {

struct CollectiveSample {
  std::string collective, impl;
  int ranks = 1;
  double bytes = 0, seconds = 0;
};

// Rows of a bench_<collective> CSV (columns collective, impl, ranks, bytes, time_us; others ignored). UsageError
// naming the file and line for a missing column or a bad value (a collective the table lacks included).
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

// Least squares of time = steps(collective, n) alpha + volume(collective, n) bytes beta (the collective table's
// wire_steps and wire_fraction: the counts of a ring, a tree or one message), one fit per (collective, impl, ranks)
// with at least two sizes; alpha is kept >= 0.
std::vector<LinkFit> fit_links(const std::vector<CollectiveSample>& samples);

// One bench_kernels benchmark, per call: its name's op (e.g. matmul_forward_qkv), implementation (the parts between
// the op and the device: cublas, v5_mma_cp_async, reference; empty for the device's default kernels), dtype (f32,
// bf16) and shape (the part after the dtype, e.g. T2048_I12288_O9216 for a --linear), FLOPs and bytes, and seconds.
struct KernelSample {
  std::string op, impl, dtype, shape;
  double flops = 0, bytes = 0, seconds = 0;
  // A matrix op of the op table (kernels/op_list.h: its cost role), rated against the matrix peak.
  bool matmul() const;
  // A part of a bench_kernels --linear (the op table's linear row names).
  bool linear() const;
};

// Whether a CSV is Google Benchmark's (bench_kernels --benchmark_format=csv): its header starts with "name,".
bool is_kernels_csv(const std::string& path);
// Rows of a bench_kernels CSV, its --csv (rates in flops_per_s, bytes_per_s) or Google Benchmark's
// --benchmark_format=csv (rates in "FLOP/s", "bytes/s"); both have name, real_time and time_unit. Rows with an error
// or without both rates are skipped. UsageError naming the file and line for a missing column or a bad value.
std::vector<KernelSample> read_kernels_csv(const std::string& path);

// A step curve fitted to (size, efficiency) samples: one point per decade of size that has samples, at the decade's
// lower bound (the smallest at 0, so that smaller ops take it), the median efficiency of its samples capped at 1.
// The errors are |curve - sample| / sample.
struct CurveFit {
  Curve curve;
  int samples = 0;
  double mean_rel_error = 0, max_rel_error = 0;
};
CurveFit fit_curve(const std::vector<std::pair<double, double>>& size_and_efficiency);

// The GPU's curves from kernel samples of one dtype: matrix efficiency by GFLOP from the matmul rows against the
// dtype's matrix peak (only the cuBLAS rows where there are any: our own versions run from naive loops up), HBM
// efficiency by bytes from the other rows against the HBM bandwidth. A curve without rows keeps the system's.
// UsageError when no row has that dtype.
struct KernelFit {
  CurveFit matrix, hbm;
};
KernelFit fit_kernel_curves(const std::vector<KernelSample>& samples, const SystemModel& sys, const std::string& dtype);
// `sys` with the fitted curves (--system-out's system): matrix and HBM efficiency from `fit`, processing roofline
// (the rates were measured on whole kernels, memory included), and the fit named in its source.
SystemModel with_kernel_fit(SystemModel sys, const KernelFit& fit);

// The --linear rows of `dtype` as measured linears, one per shape in the order first seen: each part's time from
// the cuBLAS row where the samples have cuBLAS rows of that dtype (what a framework's linear layer calls on a GPU),
// else from the
// reference forward and the default gradients (a cpu's). Times as measured (the system's op_overhead_us still
// comes on top). UsageError naming a shape that lacks a part.
std::vector<MeasuredLinear> measured_linears(const std::vector<KernelSample>& samples, const std::string& dtype);
// `sys` with `linears` as its measured linears (replacing those of the same shape and element size), named in its
// source.
SystemModel with_measured_linears(SystemModel sys, const std::vector<MeasuredLinear>& linears);

// Whether a CSV is scripts/sdpa_compare.py's (--out): its header starts "B,T,NH,hs,op,".
bool is_sdpa_csv(const std::string& path);
// Its SDPA times (column sdpa_us, bf16) as measured attention, one per (B, T, NH, hs) in the order first seen, from
// its flash_attention_forward and flash_attention_backward rows (other ops ignored). UsageError naming the file and
// line for a missing column or a bad value, or naming a shape that lacks its forward or backward.
std::vector<MeasuredAttention> read_sdpa_csv(const std::string& path);
// `sys` with `attention` as its measured attention (replacing those of the same shape), named in its source.
SystemModel with_measured_attention(SystemModel sys, const std::vector<MeasuredAttention>& attention);

}  // namespace parbench::predict
