// The columns of the CSV files the programs write and read back (parbench-plot, bench_train --calibrate, schedule
// files), one namespace per kind: writers take their header from `header`, readers their names from the constants,
// so each column name is spelled once. A header's order is its file's (README documents them; tests check them).
#pragma once
#include <span>
#include <string>

namespace parbench::csv {

// A column of a header: its name and, for doubles, the digits after the point.
struct HeaderColumn {
  const char* name;
  int precision = 3;
};

// "a,b,c": a header as its file's first line.
inline std::string header_line(std::span<const HeaderColumn> header) {
  std::string line;
  for (const HeaderColumn& c : header) line += (line.empty() ? "" : ",") + std::string(c.name);
  return line;
}

// bench_<collective> --csv (benchmarks/collective_bench/engine.cpp): one row per collective, implementation, size
// and in-place flag. Read by parbench-plot busbw and latency, and by bench_train --calibrate.
namespace collective {
inline constexpr char collective[] = "collective";
inline constexpr char impl[] = "impl";
inline constexpr char device[] = "device";
inline constexpr char ranks[] = "ranks";
inline constexpr char nodes[] = "nodes";
inline constexpr char dtype[] = "dtype";
inline constexpr char op[] = "op";
inline constexpr char root[] = "root";
inline constexpr char inplace[] = "inplace";
inline constexpr char bytes[] = "bytes";
inline constexpr char count[] = "count";
inline constexpr char time_us[] = "time_us";
inline constexpr char algbw_gbps[] = "algbw_gbps";
inline constexpr char busbw_gbps[] = "busbw_gbps";
inline constexpr char wrong[] = "wrong";
// --expect: the time the row should take on the system named and the measured row's share of it (empty cells
// without --expect or where the implementation's algorithm has no model).
inline constexpr char expected_us[] = "expected_us";
inline constexpr char pct_expected[] = "pct_expected";
// --outliers: the ranks' own time per operation (their median, the slowest and its rank) and the ranks that stand
// apart, "2 5" (empty cells without --outliers).
inline constexpr char own_median_us[] = "own_median_us";
inline constexpr char own_max_us[] = "own_max_us";
inline constexpr char own_max_rank[] = "own_max_rank";
inline constexpr char outlier_ranks[] = "outlier_ranks";
inline constexpr HeaderColumn header[] = {
    {collective}, {impl}, {device}, {ranks}, {nodes}, {dtype}, {op}, {root}, {inplace}, {bytes}, {count},
    {time_us, 3}, {algbw_gbps, 6}, {busbw_gbps, 6}, {wrong}, {expected_us, 3}, {pct_expected, 2},
    {own_median_us, 3}, {own_max_us, 3}, {own_max_rank}, {outlier_ranks}};
}  // namespace collective

// bench_links --csv: one row per pair of ranks (rank_a < rank_b); finding: "rank R" when one of the pair's ranks is
// slow, "pair" when the pair alone is, else empty.
namespace links {
inline constexpr char rank_a[] = "rank_a";
inline constexpr char rank_b[] = "rank_b";
inline constexpr char node_a[] = "node_a";
inline constexpr char node_b[] = "node_b";
inline constexpr char host_a[] = "host_a";
inline constexpr char host_b[] = "host_b";
inline constexpr char latency_us[] = "latency_us";
inline constexpr char gbps[] = "gbps";
inline constexpr char wrong[] = "wrong";
inline constexpr char finding[] = "finding";
inline constexpr HeaderColumn header[] = {{rank_a}, {rank_b}, {node_a},          {node_b}, {host_a},
                                          {host_b}, {latency_us, 3}, {gbps, 4}, {wrong},  {finding}};
}  // namespace links

// bench_memcpy --csv: one row per size.
namespace memcpy_bench {
inline constexpr char device[] = "device";
inline constexpr char bytes[] = "bytes";
inline constexpr char time_us[] = "time_us";
inline constexpr char gbps[] = "gbps";
inline constexpr char wrong[] = "wrong";
inline constexpr HeaderColumn header[] = {{device}, {bytes}, {time_us, 2}, {gbps, 2}, {wrong}};
}  // namespace memcpy_bench

// bench_kernels: its --csv (benchmarks/kernels_bench/rows.cpp, fixed columns) and the counters each benchmark sets, which
// are also columns of Google Benchmark's own CSV (--benchmark_format=csv, which bench_train --calibrate reads with
// name, real_time, time_unit and error_occurred).
namespace kernels {
inline constexpr char name[] = "name";
inline constexpr char iterations[] = "iterations";
inline constexpr char real_time[] = "real_time";
inline constexpr char cpu_time[] = "cpu_time";
inline constexpr char time_unit[] = "time_unit";
inline constexpr char batch[] = "batch";
inline constexpr char flops_per_s[] = "flops_per_s";
inline constexpr char bytes_per_s[] = "bytes_per_s";
inline constexpr char pct_cublas[] = "pct_cublas";
inline constexpr char pct_cublaslt[] = "pct_cublaslt";
inline constexpr char pct_roofline[] = "pct_roofline";
inline constexpr char error_occurred[] = "error_occurred";
inline constexpr char error_message[] = "error_message";
inline constexpr HeaderColumn header[] = {
    {name}, {iterations}, {real_time, 4}, {cpu_time, 4}, {time_unit}, {batch}, {flops_per_s, 1}, {bytes_per_s, 1},
    {pct_cublas, 2}, {pct_cublaslt, 2}, {pct_roofline, 2}, {error_occurred}, {error_message}};
// The counters (Google Benchmark's names; batch is a counter too).
inline constexpr char counter_flops[] = "FLOP/s";
inline constexpr char counter_bytes[] = "bytes/s";
inline constexpr char counter_cublas[] = "%cuBLAS";
inline constexpr char counter_cublaslt[] = "%cuBLASLt";
inline constexpr char counter_roofline[] = "%roofline";
}  // namespace kernels

// bench_train --csv (benchmarks/train/run_report.cpp, and the predicted rows of --simulate and --search): one row per
// run. Read by parbench-plot scaling, bubble and memory.
namespace train {
inline constexpr char model[] = "model";
inline constexpr char scheme[] = "scheme";
inline constexpr char schedule[] = "schedule";
inline constexpr char device[] = "device";
inline constexpr char impl[] = "impl";
inline constexpr char ranks[] = "ranks";
inline constexpr char tp[] = "tp";
inline constexpr char pp[] = "pp";
inline constexpr char dp[] = "dp";
inline constexpr char microbatches[] = "microbatches";
inline constexpr char global_batch[] = "global_batch";
inline constexpr char micro_batch[] = "micro_batch";
inline constexpr char step_ms[] = "step_ms";
inline constexpr char samples_per_s[] = "samples_per_s";
inline constexpr char tokens_per_s[] = "tokens_per_s";
inline constexpr char tflops_per_rank[] = "tflops_per_rank";
inline constexpr char mfu[] = "mfu";
inline constexpr char bubble_measured[] = "bubble_measured";
inline constexpr char bubble_theory[] = "bubble_theory";
inline constexpr char bubble_replayed[] = "bubble_replayed";
inline constexpr char peak_bytes[] = "peak_bytes";
inline constexpr char params_bytes[] = "params_bytes";
inline constexpr char grads_bytes[] = "grads_bytes";
inline constexpr char optimizer_bytes[] = "optimizer_bytes";
inline constexpr char activations_bytes[] = "activations_bytes";
inline constexpr char comm_buffer_bytes[] = "comm_buffer_bytes";
inline constexpr char workspace_bytes[] = "workspace_bytes";
inline constexpr char comm_bytes_per_step[] = "comm_bytes_per_step";
inline constexpr char loss[] = "loss";
inline constexpr char max_param_diff_vs_single[] = "max_param_diff_vs_single";
inline constexpr char estimate_bytes[] = "estimate_bytes";
inline constexpr char virtual_stages[] = "virtual_stages";
inline constexpr char sp[] = "sp";
inline constexpr char zero[] = "zero";
inline constexpr char recompute[] = "recompute";
inline constexpr char predicted[] = "predicted";
inline constexpr char forward_ms[] = "forward_ms";
inline constexpr char backward_ms[] = "backward_ms";
inline constexpr char recompute_ms[] = "recompute_ms";
inline constexpr char optimizer_ms[] = "optimizer_ms";
inline constexpr char bubble_ms[] = "bubble_ms";
inline constexpr char tp_comm_ms[] = "tp_comm_ms";
inline constexpr char pp_comm_ms[] = "pp_comm_ms";
inline constexpr char dp_comm_ms[] = "dp_comm_ms";
// A prediction's step time at the fast and slow ends of its system's efficiency spreads (predict/README.md).
inline constexpr char step_ms_low[] = "step_ms_low";
inline constexpr char step_ms_high[] = "step_ms_high";
// What the host did per step (median over timed steps, the busiest rank; measured runs only) and the fraction of
// communication-stream time that ran under computation (mean over ranks).
inline constexpr char host_waits_per_step[] = "host_waits_per_step";
inline constexpr char launches_per_step[] = "launches_per_step";
inline constexpr char device_mallocs_per_step[] = "device_mallocs_per_step";
inline constexpr char overlap[] = "overlap";
// Pipelines: the blocks of each virtual stage, "2+3+3+2" (bench_train --partition).
inline constexpr char partition[] = "partition";
// The memory of the heaviest rank at its peak, by category (MemCategory's order).
inline constexpr const char* memory_bytes[] = {params_bytes,      grads_bytes,       optimizer_bytes,
                                               activations_bytes, comm_buffer_bytes, workspace_bytes};
inline constexpr HeaderColumn header[] = {
    {model}, {scheme}, {schedule}, {device}, {impl}, {ranks}, {tp}, {pp}, {dp}, {microbatches}, {global_batch},
    {micro_batch}, {step_ms, 3}, {samples_per_s, 2}, {tokens_per_s, 1}, {tflops_per_rank, 6}, {mfu, 4},
    {bubble_measured, 4}, {bubble_theory, 4}, {bubble_replayed, 4}, {peak_bytes}, {params_bytes}, {grads_bytes},
    {optimizer_bytes}, {activations_bytes}, {comm_buffer_bytes}, {workspace_bytes}, {comm_bytes_per_step},
    {loss, 6}, {max_param_diff_vs_single, 9}, {estimate_bytes},
    // Layout columns a prediction varies, and its time split (empty for measured runs).
    {virtual_stages}, {sp}, {zero}, {recompute}, {predicted}, {forward_ms, 3}, {backward_ms, 3}, {recompute_ms, 3},
    {optimizer_ms, 3}, {bubble_ms, 3}, {tp_comm_ms, 3}, {pp_comm_ms, 3}, {dp_comm_ms, 3}, {step_ms_low, 3},
    {step_ms_high, 3},
    {host_waits_per_step}, {launches_per_step}, {device_mallocs_per_step}, {overlap, 3}, {partition}};
}  // namespace train

// A pipeline schedule as data (bench_train --schedule FILE.csv, parallel/schedule/schedule_file.cpp): one row per
// compute action, in each stage's order.
namespace schedule {
inline constexpr char stage[] = "stage";
inline constexpr char op[] = "op";
inline constexpr char microbatch[] = "microbatch";
inline constexpr char chunk[] = "chunk";
inline constexpr HeaderColumn header[] = {{stage}, {op}, {microbatch}, {chunk}};
}  // namespace schedule

}  // namespace parbench::csv
