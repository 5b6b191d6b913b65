// The collective benches' command line: every option of nccl-tests (same letters, long names and defaults) plus
// ours, and the plan they resolve to (sizes, types, ops, roots, rank count, split rule). See README "bench_<c>".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/table/types.h"
#include "core/device.h"
#include "app/common_options.h"  // and CLI::App, declared

namespace parbench {

struct BenchOptions {
  CommonOptions common;
  // nccl-tests' options.
  int nthreads = 1, ngpus = 1;                       // -t -g: ranks in a process = t x g
  std::string minbytes = "32M", maxbytes = "32M", stepbytes = "1M";  // -b -e -i
  std::uint64_t stepfactor = 0;                      // -f (0: add -i instead)
  std::string op = "sum", dtype = "float", root = "0";  // -o -d -r (each may be "all")
  int iters = 20, warmup = 1, agg = 1, cycles = 1;   // -n -w -m -N (N 0: for ever)
  int average = 1;                                   // -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks
  int per_iter = 0, per_iter_skip = 0;               // -I -K
  int parallel_init = 0, check = 1, blocking = 0;    // -p -c -z
  int graph = 0, cputime = 0, registration = 0;      // -G -C -R
  int timestamps = 0, memory = 0, unalign = 0;       // -S -M -u
  int device_api = 0, device_verify = 0, stream_null = 0;  // -D -V -y (NCCL device kernels, ...)
  std::string json_file;                             // -J
  double timeout = 0;                                // -T (0: our default, kDefaultTimeout)
  // Ours.
  std::string sizes, impl = "auto", inplace = "both";
  int ranks = 0;
  std::uint64_t seed = 1;
  bool resume = false;  // skip the rows already in --csv, append the rest
  std::string max_memory;  // --max-memory BYTES: refuse sweeps whose buffers exceed it (per rank)
  std::string expect;      // --expect SYSTEM: each row's expected time on it (expectation.h)
  bool outliers = false;  // --outliers: each rank's own time per row, the ranks that stand apart named
  std::vector<std::string> nccl_algos, nccl_protos;  // --nccl-algo, --nccl-proto (nccl_choices.h), NCCL's spelling
};

inline constexpr double kDefaultTimeout = 300;

// Registers every option on `app`, with checks that name the accepted values (exit 2 at parse time).
void add_bench_options(CLI::App& app, BenchOptions& o);

// NCCL_TESTS_SPLIT: "AND 0x7", "OR 1", "MOD 8" or "DIV 4" (also "AND:0x7", or the symbols "&0x7", "|1", "%8",
// "/4"), the value decimal, 0x hexadecimal or 0b binary; a rank's group (its color) is `rank op value`. Empty = no
// split. Bad text throws UsageError naming it and the accepted form.
struct SplitRule {
  std::string op;  // "" (none), AND, OR, MOD, DIV
  std::uint64_t value = 0;
  int color(int rank) const;
};
SplitRule parse_split_rule(const char* text);
// NCCL_TESTS_SPLIT, else NCCL_TESTS_SPLIT_MASK (a mask m: "AND m"), else no split.
SplitRule split_rule_from_environment();

// What the options resolve to, checked (UsageError for bad values, naming them and the accepted form).
struct BenchPlan {
  std::vector<std::uint64_t> sizes;
  std::vector<DType> dtypes;
  std::vector<ReduceOp> ops;
  std::vector<int> roots;  // [-1] for collectives without a root
  std::vector<std::string> impls;
  int ranks_per_process = 1;  // t x g (or --ranks)
  int planned_ranks = 1;      // processes x t x g
  double timeout = kDefaultTimeout;
  SplitRule split;
  std::uint64_t max_memory = 0;  // --max-memory (0: the device's memory)
};
BenchPlan resolve_plan(Collective c, const BenchOptions& o);
// -G on GPUs: UsageError for the options that ask for what a CUDA graph cannot hold (-z 1/2, -I 1, -y 1).
void check_graph_options(const BenchOptions& o);
// The options that only make sense together, and the output paths (UsageError naming them), before any work.
void check_run_options(const BenchOptions& o, const Device& device);
// -D/-R (nccl_device_options.cpp): UsageError naming the rule where this build's NCCL, the collective, the device
// or the other options do not allow them; -D 1|2 turns the nccl (and auto) rows into nccl-lsa / nccl-multimem.
void apply_nccl_device_options(Collective c, const BenchOptions& o, const Device& d, BenchPlan& p);
// NCCL_TESTS_DEVICE=N: the first GPU is N (the other ranks follow), on cuda unless --device cuda:N names one.
Device apply_tests_device(Device d, const BenchOptions& o);

}  // namespace parbench
