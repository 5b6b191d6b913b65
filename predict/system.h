// A system for the predictor: one GPU's peaks and efficiency curves, and the network levels between GPUs. Built-in
// systems carry published figures (predict/README.md names each source); a JSON file describes any other.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace parbench::predict {

// Efficiency by size: the first point whose threshold the size reaches, scanning from the largest threshold;
// below every threshold the smallest threshold's value. Points are (threshold, efficiency in (0, 1]). `spread`, when
// not empty, holds one value per point: how far (absolute, +-) the measurements behind the point range around it,
// which --simulate turns into a low/high range (predict/README.md).
struct Curve {
  std::vector<std::pair<double, double>> points;  // sorted by threshold, descending
  std::vector<double> spread;                      // empty, or one per point
  double at(double size) const;
  double spread_at(double size) const;
  // The curve with every efficiency moved by `sign` x its spread, kept within (0, 1].
  Curve shifted(int sign) const;
};

// How an op's compute and memory times combine: `roofline` takes the slower (they overlap fully), `no_overlap` adds
// them (Calculon's processing mode for its GPU files: kernels of the 2022 frameworks rarely overlap the two).
enum class Processing { roofline, no_overlap };
std::string processing_name(Processing p);

// Efficiency by a GEMM's inner dimension k, per kind of GEMM: `forward` (a linear's forward and attention's batched
// matmuls), a linear's input gradient (k = its output width; the weight read down its columns) and its weight
// gradient (k = the tokens; both operands read down their columns).
struct GemmCurvesByK {
  Curve forward, input_gradient, weight_gradient;
  bool empty() const { return forward.points.empty(); }
};

// A linear layer's three GEMMs timed on their own (bench_kernels --linear), less the fixed cost of an op: the cost
// model takes these for a linear of exactly this shape and element size instead of reading any curve.
struct MeasuredLinear {
  double tokens = 0, in = 0, out = 0;
  int dtype_bytes = 4;
  double forward_s = 0, input_gradient_s = 0, weight_gradient_s = 0;
  bool measures(double t, double i, double o, int bytes) const {
    return tokens == t && in == i && out == o && dtype_bytes == bytes;
  }
  bool same_shape(const MeasuredLinear& m) const { return measures(m.tokens, m.in, m.out, m.dtype_bytes); }
};

// Flash attention timed on its own (PyTorch's SDPA, causal, by scripts/sdpa_compare.py): for a microbatch of
// `batch` samples, `heads` heads on this GPU, `seq` tokens and `head_dim` channels per head, the forward and the
// backward (the gradients of q, k and v). The cost model takes these for flash attention of exactly this shape
// instead of timing its batched GEMMs on a curve.
struct MeasuredAttention {
  double batch = 0, heads = 0, seq = 0, head_dim = 0;
  int dtype_bytes = 2;
  double forward_s = 0, backward_s = 0;
  bool measures(double b, double h, double s, double d, int bytes) const {
    return batch == b && heads == h && seq == s && head_dim == d && dtype_bytes == bytes;
  }
  bool same_shape(const MeasuredAttention& o) const {
    return measures(o.batch, o.heads, o.seq, o.head_dim, o.dtype_bytes);
  }
};

struct GpuModel {
  std::string name;
  double matrix_tflops_16 = 0;  // dense 16-bit (bf16/fp16) tensor-core peak
  double matrix_tflops_32 = 0;  // fp32 matrix peak (TF32 off)
  double hbm_gbps = 0;          // memory bandwidth, 1e9 B/s
  double hbm_bytes = 0;         // capacity
  Curve matrix_efficiency;      // by the op's size in GFLOP
  Curve hbm_efficiency;         // by the bytes one op moves
  // A CPU's reference loops run at a rate set by a GEMM's inner dimension k (each output element one dependent
  // chain of k multiply-adds) and by its loop's reads, not by its FLOPs. When these curves have points a GEMM's
  // efficiency is read at its k on the curve of its kind instead of from matrix_efficiency. Empty on the built-in
  // GPUs.
  GemmCurvesByK matrix_efficiency_by_k{};
  std::vector<MeasuredLinear> measured_linears{};  // empty on the built-in GPUs
  std::vector<MeasuredAttention> measured_attention{};  // empty on the built-in GPUs
  // Ranks that can compute at once on one node (0: one per GPU). A CPU "GPU" is a core: with more ranks than
  // cores they take turns, and compute stretches by ranks / compute_units.
  double compute_units = 0;
  Processing processing = Processing::roofline;
  // Fixed time every op pays whatever its size (a call's dispatch, checks and loop set-up; on a GPU its launch),
  // added once per op the cost model counts. 0 for the built-in GPUs: no source for a value was found.
  double op_overhead_s = 0;
  // Bytes per second the optimizer update moves (its state, gradient and parameters, as optimizer_seconds counts
  // them), measured on the update kernel itself; 0: the HBM bandwidth at the HBM curve's efficiency. A CPU's update
  // runs at its own rate, far from that of the elementwise ops the HBM figures come from there.
  double optimizer_gbps = 0;
  // Bytes per second of the bias + GeLU ops (as the cost model counts them: the (b, s, f) input read and output
  // written forward, twice that backward), measured on the GeLU kernels; 0: the HBM figures. A CPU computes a tanh
  // per element, so its GeLU runs far slower per byte than its layernorms and residual adds.
  double gelu_gbps = 0;
  // Streaming multiprocessors (data sheet): a Transformer Engine userbuffers reduce-scatter takes some of them from
  // the GEMM it overlaps. 0: not given (such a prediction is refused).
  int sms = 0;
};

// One level of the network: `size` GPUs share it (a node's NVLink domain; the whole cluster for the last level).
struct NetLevel {
  std::string name;
  int size = 1;            // GPUs reachable at this level (the last level: any number)
  double gbps = 0;         // per GPU and direction, 1e9 B/s
  // Fraction of gbps a collective reaches, by its size in bytes as nccl-tests counts it (the per-rank buffer;
  // all-gather: the output): nccl-tests' busbw over gbps. A flat efficiency is a one-point curve.
  Curve efficiency{{{0, 1.0}}, {}};
  double latency_us = 0;   // per message of an algorithm's step (alpha)
  // Fixed time of one collective or send that reaches this level, whatever its algorithm, size and rank count:
  // NCCL's measured small-message times are mostly this (launch, protocol set-up, synchronisation). A collective
  // across nodes pays the inner level's and this one's.
  double collective_latency_us = 0;
  // NCCL's latency of one ring step (or tree level) over this level, which its cost model adds per step: charged
  // for the steps a ring or tree across nodes has beyond a two-node one, which the measured curves and fixed
  // latencies already hold.
  double step_latency_us = 0;
};

// Which algorithms a system's collectives may take: `every` one modelled, the least time (a library free to pick,
// as this repository's own); `nccl` NCCL's across nodes: ring, and tree for an allreduce.
enum class CollectiveAlgorithms { every, nccl };

// The nodes' host CPU, which NCCL's cost model reads for the network post overhead of a ring step (1 us Intel, 2 us
// AMD) and for its LL protocol's bandwidth cap across nodes.
enum class HostCpu { intel, amd };
// NCCL's network post overhead of one ring step across nodes on such a host, microseconds.
double nccl_net_post_us(HostCpu cpu);

struct SystemModel {
  std::string name;
  GpuModel gpu;
  std::vector<NetLevel> levels;  // innermost first; levels[i].size divides levels[i+1]'s reach
  std::string source;            // where the numbers came from, in a line
  CollectiveAlgorithms collective_algorithms = CollectiveAlgorithms::every;
  HostCpu host_cpu = HostCpu::intel;
  double matrix_tflops(int dtype_bytes) const { return dtype_bytes <= 2 ? gpu.matrix_tflops_16 : gpu.matrix_tflops_32; }
  int node_size() const { return levels.empty() ? 1 : levels.front().size; }
};

// `s` with every efficiency curve (matrix, HBM, network) moved by `sign` x its spread: sign +1 gives the
// fast end of the range the sources span, -1 the slow end.
SystemModel shifted_system(const SystemModel& s, int sign);

// `s` with every modelled algorithm offered and no per-step latency: its collectives as before NCCL's own were
// modelled (the modelling choice `nccl_collectives` undone).
SystemModel without_nccl_collectives(SystemModel s);

// "dgx-a100", "dgx-h100", "h200", "this-machine" (built from scripts/calibrate.sh's output when it exists, else
// a conservative default) or a JSON file path. Throws UsageError naming `option` (the flag that gave the value),
// the value and the accepted forms.
SystemModel load_system(const std::string& name_or_file, const std::string& option = "--system");
// Whether load_system reads `name_or_file` as a file (a path with a '/' or a name ending in .json) rather than a
// built-in name.
bool names_system_file(const std::string& name_or_file);
std::vector<std::string> builtin_system_names();
// UsageError for an unknown name, naming `option`.
SystemModel builtin_system(const std::string& name, const std::string& option = "--system");

// JSON form (the schema is in predict/README.md). from_json throws UsageError naming the bad field and what it
// accepts; `where` prefixes the message (the file name).
SystemModel system_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json system_to_json(const SystemModel& s);

}  // namespace parbench::predict
