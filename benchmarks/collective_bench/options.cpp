// nccl-tests' command line on CLI11: same short letters, long names and defaults, and ours beside them.
#include "options.h"
#include "app/cli.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "collectives/registry.h"
#include "collectives/communicator/algorithm.h"
#include "collectives/bootstrap.h"
#include "base/error.h"
#include "base/text.h"
#include "app/output.h"
#include "core/device.h"
#include "app/sizes.h"

namespace parbench {
namespace {

// "nccl, mpi, mpi-nb (library) or naive, tree, ... (hand-written)", from the algorithm registry.
std::string impl_list_text() {
  const std::vector<std::string> handwritten = handwritten_algorithm_names();
  std::vector<std::string> library;
  for (const std::string& name : algorithm_names())
    if (std::find(handwritten.begin(), handwritten.end(), name) == handwritten.end()) library.push_back(name);
  return join(library) + " (library) or " + join(handwritten) + " (hand-written)";
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::uint64_t> sweep_sizes(const BenchOptions& o) {
  if (!o.sizes.empty()) return parse_size_list(o.sizes);
  const std::uint64_t lo = parse_size(o.minbytes), hi = parse_size(o.maxbytes);
  if (lo > hi)
    throw UsageError("--minbytes " + o.minbytes + " is larger than --maxbytes " + o.maxbytes +
                     "; the sweep goes from -b up to -e");
  std::vector<std::uint64_t> v;
  if (o.stepfactor > 1) {
    for (std::uint64_t s = lo; s <= hi; s *= o.stepfactor) {
      v.push_back(s);
      if (s == 0 || s > hi / o.stepfactor) break;  // no overflow past the largest size
    }
    return v;
  }
  if (o.stepfactor == 1) throw UsageError("--stepfactor 1 would never end; use 2 or more");
  const std::uint64_t step = parse_size(o.stepbytes);
  if (step == 0 && lo != hi) throw UsageError("--stepbytes 0 would never end; give a positive step");
  if (step > 0 && (hi - lo) / step >= kMaxSweepSizes)
    throw UsageError("-b " + o.minbytes + " -e " + o.maxbytes + " -i " + o.stepbytes + " gives " +
                     std::to_string((hi - lo) / step + 1) + " sizes, more than " + std::to_string(kMaxSweepSizes) +
                     "; use a larger -i or -f");
  for (std::uint64_t s = lo; s <= hi; s += step) {
    v.push_back(s);
    if (step == 0 || hi - s < step) break;  // no overflow past the largest size
  }
  return v;
}

// An int option checked against [lo, hi]; the message names the value and the range.
CLI::Option* int_option(CLI::App& app, const std::string& names, int& v, const std::string& what, int lo, int hi) {
  return app.add_option(names, v, what)->capture_default_str()->check(in_range(lo, hi));
}

std::vector<int> resolve_roots(Collective c, const std::string& root, int ranks) {
  if (!is_rooted(c)) return {-1};
  std::vector<int> roots;
  if (root == "all") {
    for (int r = 0; r < ranks; ++r) roots.push_back(r);
    return roots;
  }
  int r = -1;
  try {
    std::size_t used = 0;
    r = std::stoi(root, &used);
    if (used != root.size()) r = -1;
  } catch (const std::exception&) {
  }
  if (r < 0 || r >= ranks)
    throw UsageError("--root " + root + " is outside the ranks 0.." + std::to_string(ranks - 1) +
                     "; accepted: a rank or all");
  return {r};
}

// --nccl-algo, --nccl-proto (nccl_choices.h): NCCL's names in any case, kept in NCCL's spelling.
void add_nccl_choice_options(CLI::App& app, BenchOptions& o) {
  app.add_option("--nccl-algo", o.nccl_algos,
                 "comma list of NCCL algorithms (NCCL_ALGO), each a block of its own beside the nccl block, with "
                 "every --nccl-proto")
      ->delimiter(',')
      ->transform(CLI::IsMember({"Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"},
                                CLI::ignore_case));
  app.add_option("--nccl-proto", o.nccl_protos,
                 "comma list of NCCL protocols (NCCL_PROTO), each a block of its own beside the nccl block")
      ->delimiter(',')
      ->transform(CLI::IsMember({"LL", "LL128", "Simple"}, CLI::ignore_case));
}

}  // namespace

void add_bench_options(CLI::App& app, BenchOptions& o) {
  add_common_options(app, o.common);
  int_option(app, "-t,--nthreads", o.nthreads, "threads per process (ranks in a process = t x g)", 1, 1024);
  int_option(app, "-g,--ngpus", o.ngpus, "GPUs (ranks) per thread", 1, 1024);
  app.add_option("-b,--minbytes", o.minbytes, "smallest size of the sweep (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxbytes, "largest size of the sweep")->capture_default_str();
  app.add_option("-f,--stepfactor", o.stepfactor, "multiply the size by this each step (default: add -i)");
  app.add_option("-i,--stepbytes", o.stepbytes, "add this each step when -f is not given")->capture_default_str();
  app.add_option("--sizes", o.sizes, "size list instead of -b/-e/-f/-i: 8:1G:x2, 1K:64M:+1M or 1K,4K,1M")
      ->check(size_list_validator());
  int_option(app, "-n,--iters", o.iters, "timed iterations per size", 1, 1 << 30);
  int_option(app, "-w,--warmup_iters", o.warmup, "warm-up iterations", 0, 1 << 30);
  int_option(app, "-m,--agg_iters", o.agg, "operations aggregated per iteration (one group)", 1, 1 << 20);
  int_option(app, "-N,--run_cycles", o.cycles, "times the whole sweep runs (0: until stopped)", 0, 1 << 30);
  int_option(app, "-a,--average", o.average, "time over ranks: 0 rank 0, 1 mean, 2 min, 3 max", 0, 3);
  int_option(app, "-I,--per_iter_timing", o.per_iter, "1: time each iteration, add i_min/i_max/i_p99/i_cv% columns", 0, 1);
  int_option(app, "-K,--per_iter_skip", o.per_iter_skip, "iterations left out of -I's statistics", 0, 1 << 30);
  int_option(app, "-p,--parallel_init", o.parallel_init, "1: start the ranks' communicators in parallel", 0, 1);
  int_option(app, "-c,--check", o.check, "data-check rounds after timing; 0 prints N/A", 0, 1 << 20);
  int_option(app, "-z,--blocking", o.blocking,
             "0 one wait per timed batch, 1 a wait and a barrier after each op, 2 a wait after each op, 3 each "
             "iteration timed alone after a barrier",
             0, 3);
  int_option(app, "-G,--cudagraph", o.graph, "CUDA graph launches of the captured iterations (cuda only)", 0,
             1 << 20);
  int_option(app, "-C,--report_cputime", o.cputime, "1: report the host's issue time instead of wall time", 0, 1);
  int_option(app, "-R,--local_register", o.registration,
             "NCCL buffer registration of the nccl rows: 0 none, 1 local (ncclCommRegister), 2 symmetric window "
             "(needs NCCL's device API, 2.28+)", 0, 2);
  int_option(app, "-S,--report_timestamps", o.timestamps, "1: end every row with its date and time", 0, 1);
  int_option(app, "-M,--memory_report", o.memory, "1: print each rank's memory after the sweep", 0, 1);
  int_option(app, "-u,--unalign", o.unalign, "offset every buffer by this many elements", 0, 4096);
  int_option(app, "-D,--device_implementation", o.device_api,
             "allreduce of the nccl rows: 0 NCCL's, 1 our LSA kernel, 2 our multimem kernel, on NCCL's device API "
             "(2.28+, with -R 2)", 0, 2);
  int_option(app, "-V,--device_verify", o.device_verify, "NCCL device-API check (not available here)", 0, 1);
  int_option(app, "-y,--stream_null", o.stream_null, "1: run on the default stream (cuda)", 0, 1);
  app.add_option("-o,--op", o.op, "sum, prod, max, min, avg or all")->capture_default_str();
  app.add_option("-d,--datatype", o.dtype,
                 "double, float, half, bfloat16, int32, int8, uint8 (or f64 ... u8), or all")->capture_default_str();
  app.add_option("-r,--root", o.root, "root of rooted collectives, or all")->capture_default_str();
  app.add_option("-J,--output_file", o.json_file, "write nccl-tests' JSON (version 2) to this file");
  app.add_option("-T,--timeout", o.timeout, "seconds an operation may take before the run aborts (0: 300)")
      ->capture_default_str()->check(at_least(0));
  app.add_option("--impl", o.impl,
                 "comma list of implementations: " + impl_list_text() + "; auto = " + auto_policy_text())
      ->capture_default_str();
  app.add_flag_callback(
      "--list-impls",
      [] {
        std::fputs(list_implementations().c_str(), stdout);
        throw CLI::Success();
      },
      "print every implementation: name, kind and the collectives of the device-side ones; then exit");
  app.add_option("--expect", o.expect,
                 "a predictor system (dgx-a100, dgx-h100, h200, this-machine or FILE.json): each row's expected time "
                 "there (the alpha-beta model of the implementation's algorithm) and its share, %expected, in a table "
                 "after each block and in --csv/--json");
  app.add_flag("--outliers", o.outliers,
               "each rank's own time per row (outside the transport's waits) and, after each block, the ranks whose "
               "own time stands apart (host-driven implementations)");
  add_nccl_choice_options(app, o);
  app.add_option("--ranks", o.ranks, "ranks as threads of this process (same as -t N; without mpirun)")
      ->check(CLI::Range(0, 1024));
  add_bootstrap_option(app, select_bootstrap);
  app.add_option("--inplace", o.inplace, "both (default), only (in-place only) or off (out-of-place only)")
      ->check(CLI::IsMember({"both", "only", "off"}));
  app.add_option("--seed", o.seed, "seed of the data-check inputs")->capture_default_str();
  app.add_option("--max-memory", o.max_memory,
                 "refuse, before allocating, a sweep whose largest size needs more buffer memory per rank than "
                 "BYTES (K/M/G; default: the device's memory)");
  app.add_flag("--resume", o.resume,
               "skip the sizes already in --csv (same collective, impl, device, ranks, nodes, dtype, op, root, "
               "inplace, bytes) and append the rest; a CSV with another header is refused");
}

int SplitRule::color(int rank) const {
  const auto r = std::uint64_t(rank);
  if (op == "AND") return int(r & value);
  if (op == "OR") return int(r | value);
  if (op == "MOD") return int(r % value);
  if (op == "DIV") return int(r / value);
  return 0;
}

namespace {

// A split value: decimal, 0x hexadecimal or 0b binary; false for anything else (a sign, a suffix, overflow).
bool parse_split_value(const std::string& v, std::uint64_t& out) {
  int base = 10;
  std::string digits = v;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) base = 16, digits = v.substr(2);
  else if (v.size() > 2 && v[0] == '0' && (v[1] == 'b' || v[1] == 'B')) base = 2, digits = v.substr(2);
  if (digits.empty() || !std::isxdigit(static_cast<unsigned char>(digits[0]))) return false;
  try {
    std::size_t used = 0;
    out = std::stoull(digits, &used, base);
    return used == digits.size();
  } catch (const std::exception&) {
    return false;
  }
}

// "AND 0x7", "AND:0x7", "&0x7", "& 7": the operator (a word or its symbol) and the value text.
bool split_operator(const std::string& s, std::string& op, std::string& value) {
  static const std::pair<const char*, const char*> symbols[] = {{"&", "AND"}, {"|", "OR"}, {"%", "MOD"}, {"/", "DIV"}};
  for (const auto& [symbol, word] : symbols)
    if (s.rfind(symbol, 0) == 0) {
      op = word, value = s.substr(1);
      break;
    }
  if (op.empty()) {
    std::size_t letters = 0;
    while (letters < s.size() && std::isalpha(static_cast<unsigned char>(s[letters]))) ++letters;
    op = s.substr(0, letters), value = s.substr(letters);
    std::transform(op.begin(), op.end(), op.begin(), ::toupper);
  }
  const std::size_t first = value.find_first_not_of(" :\t");
  value = first == std::string::npos ? "" : value.substr(first);
  return op == "AND" || op == "OR" || op == "MOD" || op == "DIV";
}

}  // namespace

SplitRule parse_split_rule(const char* text) {
  SplitRule rule;
  if (!text || !*text) return rule;
  std::string s(text);
  s.erase(0, std::min(s.size(), s.find_first_not_of(" \t")));
  s.erase(s.find_last_not_of(" \t") + 1);
  std::string value;
  bool ok = split_operator(s, rule.op, value) && parse_split_value(value, rule.value);
  if (ok && (rule.op == "MOD" || rule.op == "DIV") && rule.value == 0) ok = false;
  if (!ok)
    throw UsageError("NCCL_TESTS_SPLIT='" + std::string(text) +
                     "' is not understood; accepted: 'AND|OR|MOD|DIV <number>' or one of the symbols & | % / "
                     "before the number, the number decimal, 0x hexadecimal or 0b binary (MOD and DIV above 0), e.g. 'AND 0x7', '%8' or "
                     "'DIV 0b100'");
  return rule;
}

SplitRule split_rule_from_environment() {
  const char* split = std::getenv("NCCL_TESTS_SPLIT");
  if (split && *split) return parse_split_rule(split);
  const char* mask = std::getenv("NCCL_TESTS_SPLIT_MASK");
  if (!mask || !*mask) return {};
  SplitRule rule;
  rule.op = "AND";
  if (!parse_split_value(mask, rule.value))
    throw UsageError("NCCL_TESTS_SPLIT_MASK='" + std::string(mask) + "' is not a mask; accepted: a number, decimal, "
                     "0x hexadecimal or 0b binary, e.g. 0x7 (a rank's group is rank AND mask)");
  return rule;
}

BenchPlan resolve_plan(Collective c, const BenchOptions& o) {
  BenchPlan p;
  p.sizes = sweep_sizes(o);
  for (const auto& d : split_list(o.dtype)) {
    if (d == "all") p.dtypes = all_dtypes();
    else p.dtypes.push_back(parse_dtype(d));
  }
  for (const auto& s : split_list(o.op)) {
    if (s == "all") p.ops = all_reduce_ops();
    else p.ops.push_back(parse_reduce_op(s));
  }
  if (p.dtypes.empty()) throw UsageError("-d/--datatype is empty; accepted: double, float, half, ... or all");
  if (p.ops.empty()) throw UsageError("-o/--op is empty; accepted: sum, prod, max, min, avg or all");
  if (!is_reduction(c)) p.ops = {ReduceOp::sum};
  p.impls = split_list(o.impl);
  if (p.impls.empty()) throw UsageError("--impl is empty; accepted: auto or a comma list of implementations");
  for (const auto& i : p.impls)
    if (i != "auto") find_algorithm(i);  // UsageError for unknown names
  const int tg = o.nthreads * o.ngpus;
  const bool mpi = launched_as_processes();  // there --ranks is the world size, which the bootstrap checks
  if (!mpi && o.ranks > 0 && tg > 1 && o.ranks != tg)
    throw UsageError("--ranks " + std::to_string(o.ranks) + " disagrees with -t " + std::to_string(o.nthreads) +
                     " x -g " + std::to_string(o.ngpus) + "; give one of them");
  p.ranks_per_process = !mpi && o.ranks > 0 ? o.ranks : tg;
  p.planned_ranks = (mpi ? launcher_world_size() : 1) * p.ranks_per_process;
  p.timeout = o.timeout > 0 ? o.timeout : kDefaultTimeout;
  p.split = split_rule_from_environment();
  p.roots = resolve_roots(c, o.root, p.planned_ranks);
  if (o.per_iter_skip >= o.iters && o.per_iter)
    throw UsageError("-K " + std::to_string(o.per_iter_skip) + " skips every one of the " +
                     std::to_string(o.iters) + " iterations; accepted: -K below -n");
  return p;
}

// -G on GPUs: the options that ask for what a graph cannot hold.
void check_graph_options(const BenchOptions& o) {
  if (o.blocking == 1 || o.blocking == 2)
    throw UsageError("-G " + std::to_string(o.graph) + " with -z " + std::to_string(o.blocking) +
                     ": a wait after each operation cannot be captured in a CUDA graph; accepted with -z 0 or 3");
  if (o.per_iter)
    throw UsageError("-G " + std::to_string(o.graph) + " with -I 1: the graph runs every iteration in one launch, "
                     "so there is no time per iteration; use one or the other");
  if (o.stream_null)
    throw UsageError("-G " + std::to_string(o.graph) + " with -y 1: the default stream cannot be captured in a "
                     "CUDA graph; use one or the other");
}

// The options that only make sense together, and the output paths, checked before any work.
void check_run_options(const BenchOptions& o, const Device& device) {
  check_output_paths({{"--csv", o.common.csv}, {"--json", o.common.json}, {"-J/--output_file", o.json_file},
                      {"--trace", o.common.trace}});
  if (o.resume && o.common.csv.empty())
    throw UsageError("--resume needs --csv FILE: the sizes to skip are the rows of that file");
  if (o.graph > 0 && device.kind == DeviceKind::cuda) check_graph_options(o);
  if (o.resume && o.cycles != 1)
    throw UsageError("--resume with -N " + std::to_string(o.cycles) + ": accepted with -N 1 only (a row's key "
                     "does not say which cycle measured it)");
}

// NCCL_TESTS_DEVICE=N: the first GPU is N (the other ranks follow it), on cuda unless --device cuda:N names one.
Device apply_tests_device(Device d, const BenchOptions& o) {
  const char* v = std::getenv("NCCL_TESTS_DEVICE");
  if (!v || !*v) return d;
  const std::string text(v);
  if (text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("NCCL_TESTS_DEVICE='" + text + "' is not a GPU index; accepted: a number from 0, e.g. 2");
  if (d.kind != DeviceKind::cuda || o.common.device.find(':') != std::string::npos) return d;
  try {
    return resolve_device("cuda:" + text, nullptr);
  } catch (const UsageError& e) {
    throw UsageError("NCCL_TESTS_DEVICE='" + text + "' names no GPU here (" + e.what() +
                     "); accepted: a GPU index from 0");
  }
}

}  // namespace parbench
