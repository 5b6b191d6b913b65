// Built-in systems and the JSON form of a system, with a schema check that names the bad field.
#include "predict/system.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/text.h"

namespace parbench::predict {

std::string processing_name(Processing p) { return p == Processing::roofline ? "roofline" : "no_overlap"; }

double nccl_net_post_us(HostCpu cpu) { return cpu == HostCpu::amd ? 2.0 : 1.0; }

SystemModel without_nccl_collectives(SystemModel s) {
  s.collective_algorithms = CollectiveAlgorithms::every;
  for (NetLevel& level : s.levels) level.step_latency_us = 0;
  return s;
}

namespace {

// The point a size takes: the first whose threshold it reaches (largest first), else the smallest threshold's.
std::size_t point_of(const Curve& c, double size) {
  for (std::size_t i = 0; i < c.points.size(); ++i)
    if (size >= c.points[i].first) return i;
  return c.points.size() - 1;
}

}  // namespace

double Curve::at(double size) const { return points.empty() ? 1.0 : points[point_of(*this, size)].second; }

double Curve::spread_at(double size) const {
  return points.empty() || spread.empty() ? 0.0 : spread[point_of(*this, size)];
}

Curve Curve::shifted(int sign) const {
  Curve c = *this;
  for (std::size_t i = 0; i < c.spread.size() && i < c.points.size(); ++i)
    c.points[i].second = std::clamp(c.points[i].second + sign * c.spread[i], 1e-3, 1.0);
  return c;
}

SystemModel shifted_system(const SystemModel& s, int sign) {
  SystemModel out = s;
  GemmCurvesByK& by_k = out.gpu.matrix_efficiency_by_k;
  for (Curve* c : {&out.gpu.matrix_efficiency, &out.gpu.hbm_efficiency, &by_k.forward, &by_k.input_gradient,
                   &by_k.weight_gradient})
    *c = c->shifted(sign);
  for (NetLevel& l : out.levels) l.efficiency = l.efficiency.shifted(sign);
  return out;
}

namespace {

// Every number below is traced in predict/README.md ("Where the built-in numbers come from"): the source, what was
// measured on what, and the values. A point's third number is its spread (+-), the range of the measurements.
Curve curve(std::vector<std::pair<double, double>> points, std::vector<double> spread = {}) {
  return {std::move(points), std::move(spread)};
}

// HBM efficiency by the bytes one kernel moves (read + written), from streaming kernels that read and write
// (predict/README.md [M1]-[M4]). >= 100 MB: the median of the large-buffer rates, spread half their interquartile
// range. 10-100 MB and 1-10 MB: single launches, whose times carry the launch-and-sync floor of one kernel (the
// smallest time in the same table) that back-to-back kernels mostly hide: the point is the middle between the
// rate as timed and with that floor taken off, the spread half their distance. Below 1 MB nothing but byte-element
// kernels was measured: the 1 MB value, assumed (no spread).
Curve a100_hbm() { return curve({{100e6, 0.84}, {10e6, 0.69}, {1e6, 0.47}, {0, 0.47}}, {0.02, 0.08, 0.32, 0}); }
// Hopper: no per-size measurement of an H100 SXM was found; H100 PCIe and H200 rates over their own peaks.
Curve hopper_hbm() { return curve({{100e6, 0.85}, {10e6, 0.82}, {1e6, 0.59}, {0, 0.59}}, {0.03, 0.11, 0.41, 0}); }

// A100 16-bit GEMM efficiency by GFLOP: medians per decade of cuBLAS fp16 M = N = K runs on an A100 (triton-lang/
// triton#3551), spread half their interquartile range; at >= 100 GFLOP the middle of that run's best (0.795) and the
// A100 SXM's maximum achievable matmul FLOPS (0.859, 0.869; stas00/ml-engineering).
Curve a100_matrix() { return curve({{100, 0.83}, {10, 0.74}, {1, 0.49}, {0, 0.07}}, {0.04, 0.04, 0.12, 0.05}); }

// H100 bf16 GEMM efficiency by GFLOP: medians per decade of XLA's measured sm_90 matmul table
// (matmul_interpolator_data.h), spread half their interquartile range; >= 100 GFLOP with the H100 SXM's maximum
// achievable matmul FLOPS (0.801, 0.803).
Curve h100_matrix() { return curve({{100, 0.79}, {10, 0.63}, {1, 0.32}, {0, 0.04}}, {0.02, 0.04, 0.08, 0.02}); }

constexpr double kMiB = 1048576;

// DGX A100 NVLink 3 (300 GB/s per direction): nccl-tests all_reduce_perf busbw / 300 on 8 A100-SXM4-80GB (NCCL
// 2.16.2; and 232.5 GB/s at 4 GB); below 32 MiB nothing was measured: the 32 MiB value, assumed.
Curve a100_nvlink() {
  return curve({{1024 * kMiB, 0.774}, {256 * kMiB, 0.75}, {64 * kMiB, 0.69}, {32 * kMiB, 0.568}, {0, 0.568}},
               {0.002, 0.006, 0.011, 0, 0});
}

// DGX A100 HDR InfiniBand (8 x 25 GB/s per node): all_reduce_perf busbw over two nodes / 200 (NCCL 2.12.12; and
// NVIDIA's 192 GB/s at large sizes); below 32 MiB (pipeline sends among them) the 32 MiB value, assumed.
Curve a100_infiniband() {
  return curve({{1024 * kMiB, 0.937}, {256 * kMiB, 0.866}, {64 * kMiB, 0.69}, {32 * kMiB, 0.484}, {0, 0.484}},
               {0.023, 0.018, 0.033, 0, 0});
}

// NCCL's collectives over NVLink and InfiniBand: its algorithms and protocols, with the per-step latencies of its
// cost model (its tuner constants for a ring step of the Simple protocol, which large messages use, charged beyond
// two nodes): 14 us over the network; over NVLink 3.4 us, but in a ring that spans nodes at least three network posts
// of 1 us (Intel hosts) or 2 us (AMD hosts).
SystemModel with_nccl(SystemModel s, HostCpu cpu) {
  s.collective_algorithms = CollectiveAlgorithms::nccl;
  s.host_cpu = cpu;
  s.levels.at(0).step_latency_us = std::max(3.4, 3 * nccl_net_post_us(cpu));
  s.levels.at(1).step_latency_us = 14;
  return s;
}

SystemModel dgx_a100() {
  GpuModel g{"A100-SXM4-80GB", 312, 19.5, 2039, 80e9, a100_matrix(), a100_hbm()};
  g.processing = Processing::no_overlap;  // as Calculon's file
  g.sms = 108;
  // Collective latencies: NCCL 1 KiB allreduce on the 8 GPUs of a node and between two nodes of one GPU each
  // (no per-step alpha: those times are the whole of a small collective).
  return with_nccl(
      {"dgx-a100", g,
       {{"nvlink3", 8, 300, a100_nvlink(), 0, 16.96}, {"infiniband-hdr", 1 << 30, 25, a100_infiniband(), 0, 21.27}},
       "A100 80GB SXM data sheet; DGX A100: NVSwitch, 8 HDR NICs per node; measured GEMM and nccl-tests curves"},
      HostCpu::amd);  // two AMD EPYC per node
}

// H100 NVLink 4 (450 GB/s per direction): nccl-tests all_reduce_perf busbw / 450 on 4 H100 SXM of an HGX node (NCCL
// 2.29), points as the A100 curve's; at >= 1 GiB with the large-message 0.83 (ring busbw ~370, sendrecv 364.9, p2p
// 376-380 GB/s); below 32 MiB the 32 MiB value, assumed.
Curve h100_nvlink() {
  return curve({{1024 * kMiB, 0.81}, {256 * kMiB, 0.764}, {64 * kMiB, 0.70}, {32 * kMiB, 0.636}, {0, 0.636}},
               {0.02, 0.01, 0.023, 0, 0});
}

// DGX H100: NDR at 0.94 of 50 GB/s (46-48 GB/s per NIC), large messages only: flat, no per-size measurement found.
SystemModel dgx_h100() {
  GpuModel g{"H100-SXM5-80GB", 989, 67, 3350, 80e9, h100_matrix(), hopper_hbm()};
  g.processing = Processing::no_overlap;
  g.sms = 132;
  // Collective latencies: NCCL 8 B allreduce on 4 H100s of a node (CUDA graph); across nodes DGX A100's HDR
  // figure, assumed (no H100 measurement found).
  return with_nccl({"dgx-h100", g,
                    {{"nvlink4", 8, 450, h100_nvlink(), 0, 16.1},
                     {"infiniband-ndr", 1 << 30, 50, curve({{0, 0.94}}, {0.02}), 0, 21.27}},
                    "H100 SXM data sheet; DGX H100: NVSwitch, 8 NDR NICs per node; measured GEMM and NCCL bandwidths"},
                   HostCpu::intel);  // two Intel Xeon per node
}

SystemModel h200() {
  SystemModel s = dgx_h100();
  s.name = "h200";
  s.gpu.name = "H200-SXM-141GB";
  s.gpu.hbm_gbps = 4800;
  s.gpu.hbm_bytes = 141e9;
  s.source = "H200 SXM data sheet (H100 compute, 141 GB HBM3e at 4.8 TB/s); network as DGX H100";
  return s;
}

// A 2-core VM running the cpu device; scripts/calibrate.sh measures the real figures and writes a file.
SystemModel this_machine_default() {
  GpuModel g{"cpu", 0.01, 0.01, 10, 8e9, curve({{0, 1.0}}), curve({{0, 1.0}})};
  return {"this-machine", g, {{"shared-memory", 1 << 30, 1.0, curve({{0, 1.0}}), 20.0}},
          "uncalibrated default: run scripts/calibrate.sh to measure this machine"};
}

}  // namespace

std::vector<std::string> builtin_system_names() { return {"dgx-a100", "dgx-h100", "h200", "this-machine"}; }

SystemModel builtin_system(const std::string& name, const std::string& option) {
  if (name == "dgx-a100") return dgx_a100();
  if (name == "dgx-h100") return dgx_h100();
  if (name == "h200") return h200();
  if (name == "this-machine") return this_machine_default();
  throw UsageError(option + " '" + name + "' is unknown; accepted: " + join(builtin_system_names()) +
                   ", or a system FILE.json");
}

bool names_system_file(const std::string& name_or_file) {
  return name_or_file.find('/') != std::string::npos ||
         (name_or_file.size() > 5 && name_or_file.ends_with(".json"));
}

SystemModel load_system(const std::string& name_or_file, const std::string& option) {
  std::string path = name_or_file;
  if (!names_system_file(name_or_file)) {
    const char* env = std::getenv("PARBENCH_THIS_MACHINE");
    if (name_or_file != "this-machine" || !env || !*env) return builtin_system(name_or_file, option);
    path = env;  // scripts/calibrate.sh's file
  }
  std::ifstream in(path);
  if (!in) throw UsageError(option + ": cannot read system file " + path + "; accepted: a built-in name or FILE.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("system file " + path + " is not JSON: " + e.what());
  }
  return system_from_json(j, path);
}

}  // namespace parbench::predict
