// A collective benchmark run as parbench-compare reads it: rows keyed by what was measured, each with its time
// samples. Four forms are read: our CSV (--csv) and JSON (--json), and nccl-tests' JSON (-J, version 2 as nccl-tests
// 2.19 writes it; ours follows it) and stdout table (ours follows that too).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace parbench::compare {

// What a row measured. `collective` without underscores ("allreduce", "reducescatter"); `impl` "" where the file
// does not say (nccl-tests' own output, or one of ours with a single implementation), which matches any; `dtype` in
// our short names (f32, bf16, ...) where nccl-tests' name has one.
struct RowKey {
  std::string collective, impl;
  std::uint64_t bytes = 0;
  std::string dtype, op;
  int root = -1;
  int inplace = 0;
  auto tie() const { return std::tie(collective, bytes, dtype, op, root, inplace, impl); }
  bool operator<(const RowKey& o) const { return tie() < o.tie(); }
  std::string text() const;  // "allreduce ring 1048576 f32 sum out-of-place"
};

// A row's samples: per-iteration times where the file has them (-I 1), else one time per repeated row (-N, or the
// same size twice); the bus bandwidth's mean.
struct RowSamples {
  std::vector<double> time_us;
  double busbw_sum = 0;
  int busbw_n = 0;
  double busbw() const { return busbw_n ? busbw_sum / busbw_n : 0; }
};

struct Run {
  std::string path, format;  // format: "csv", "json", "nccl-tests json", "nccl-tests table"
  std::map<RowKey, RowSamples> rows;
};

// Reads `path` in whichever of the four forms it is (UsageError naming the file and what it expected otherwise).
Run read_run(const std::string& path);

// nccl-tests' and our names of a collective alike: "all_reduce_perf", "bench_allreduce" and "allreduce" give
// "allreduce".
std::string collective_of_program(std::string name);
// nccl-tests' type names in our short form ("float" -> "f32"); other names as they are.
std::string short_dtype(const std::string& name);

}  // namespace parbench::compare
