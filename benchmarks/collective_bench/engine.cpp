// Collective benchmark engine: parses the nccl-tests command line, starts the ranks (mpirun or threads), sweeps
// sizes per implementation, times, checks, and prints nccl-tests' table on rank 0.
#include "engine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "collectives/bootstrap.h"
#include "collectives/datacheck.h"
#include "app/cli.h"
#include "core/error.h"
#include "core/memory.h"
#include "app/report.h"
#include "core/sizes.h"
#include "profiles/range.h"
#include "profiles/trace.h"

#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace parbench {
namespace {

struct Options {
  CommonOptions common;
  std::string minbytes = "32M", maxbytes = "32M", stepbytes = "1M", sizes;
  std::uint64_t stepfactor = 0;
  int iters = 20, warmup = 1, check = 1, root = 0, ranks = 0;
  std::string op = "sum", dtype = "float", impl = "auto", inplace = "both";
  double timeout = 300;
  std::uint64_t seed = 1;
};

// nccl-tests' names in the text table (CSV and JSON use ours).
const char* nccl_type_name(DType t) {
  switch (t) {
    case DType::f64: return "double";
    case DType::f32: return "float";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
  }
  return "?";
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::uint64_t> sweep_sizes(const Options& o) {
  if (!o.sizes.empty()) return parse_size_list(o.sizes);
  const std::uint64_t lo = parse_size(o.minbytes), hi = parse_size(o.maxbytes);
  if (lo > hi)
    throw UsageError("--minbytes " + o.minbytes + " is larger than --maxbytes " + o.maxbytes +
                     "; the sweep goes from -b up to -e");
  std::vector<std::uint64_t> v;
  if (o.stepfactor > 1) {
    for (std::uint64_t s = lo; s <= hi; s *= o.stepfactor) {
      v.push_back(s);
      if (s == 0) break;
    }
  } else {
    if (o.stepfactor == 1) throw UsageError("--stepfactor 1 would never end; use 2 or more");
    const std::uint64_t step = parse_size(o.stepbytes);
    if (step == 0 && lo != hi) throw UsageError("--stepbytes 0 would never end; give a positive step");
    for (std::uint64_t s = lo; s <= hi; s += step) {
      v.push_back(s);
      if (step == 0) break;
    }
  }
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void device_sync(const Device& d) {
#ifdef PARBENCH_HAVE_CUDA
  if (d.kind == DeviceKind::cuda) CUDA_CHECK(cudaDeviceSynchronize());
#else
  (void)d;
#endif
}

struct Half {
  bool ran = false;
  double time_us = 0, algbw = 0, busbw = 0;
  std::int64_t wrong = -1;  // -1: not checked
};

// Test hooks (environment, so that no user option exists for them): PARBENCH_TEST_SKIP_RANK=R makes rank R skip
// the measured collective, as a misbehaving rank would (the others must time out); PARBENCH_TEST_CORRUPT_RANK=R
// makes rank R spoil its first output element before the data check (the check must catch it).
int hook_rank(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

// NaN in every float type (the integer types read it as -1 or 255, which only usually differs from the expected).
constexpr unsigned char kSpoiled[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

class Bench {
 public:
  Bench(Collective c, const Options& o, Device d, std::vector<std::uint64_t> sizes, std::vector<DType> dtypes,
        std::vector<ReduceOp> ops, std::vector<std::string> impls)
      : coll_(c), o_(o), device_(d), sizes_(std::move(sizes)), dtypes_(std::move(dtypes)), ops_(std::move(ops)),
        impls_(std::move(impls)),
        table_({{"collective"}, {"impl"}, {"device"}, {"ranks"}, {"nodes"}, {"dtype"}, {"op"}, {"root"},
                {"inplace"}, {"bytes"}, {"count"}, {"time_us", 3}, {"algbw_gbps", 6}, {"busbw_gbps", 6},
                {"wrong"}}) {}

  // Runs on every rank; returns the program's exit status (meaningful on rank 0).
  int run(Communicator& comm) {
    const bool out = comm.rank() == 0 && !o_.common.quiet;
    const int n = comm.size();
    double first_node = comm.local_rank() == 0 ? 1 : 0, nodes_d = 0;
    comm.allreduce(&first_node, &nodes_d, 1, DType::f64, ReduceOp::sum, "naive");
    nodes_ = int(nodes_d);
    if (out) header(comm);
    int ran_blocks = 0;
    std::string refusals;
    for (const std::string& name : impls_) {
      const Algorithm& algo = comm.resolve(name, coll_);
      if (std::string why = algo.unsupported(coll_, comm); !why.empty()) {
        if (out) std::printf("#\n# %s: not run: %s\n", std::string(algo.name()).c_str(), why.c_str());
        refusals += "\n  " + std::string(algo.name()) + ": " + why;
        continue;
      }
      ++ran_blocks;
      block(comm, algo, out);
    }
    if (out) {
      std::printf("#\n# Out of bounds values : %lld %s\n#\n", (long long)wrong_total_,
                  wrong_total_ ? "FAILED" : "OK");
      std::fflush(stdout);
    }
    if (comm.rank() == 0) {
      if (!o_.common.csv.empty()) table_.write_csv(o_.common.csv);
      if (!o_.common.json.empty()) table_.write_json(o_.common.json);
    }
    if (ran_blocks == 0)
      throw UsageError("none of the implementations asked for can run " + std::string(collective_name(coll_)) +
                       " here:" + refusals);
    if (wrong_total_ > 0) {
      if (comm.rank() == 0)
        std::fprintf(stderr, "error: %lld wrong elements in the data check\n", (long long)wrong_total_);
      return 1;
    }
    (void)n;
    return 0;
  }

 private:
  void header(const Communicator& comm) {
    std::printf("# parbench bench_%s: %d rank(s) on %d node(s) (%s), device %s, transport %s\n",
                std::string(collective_name(coll_)).c_str(), comm.size(), nodes_,
                launched_by_mpirun() ? "mpirun" : "threads", device_name(device_).c_str(),
                std::string(comm.transport().name()).c_str());
    std::printf("# iters %d, warm-up %d, check %d, seed %llu, timeout %g s; time is the max over ranks\n", o_.iters,
                o_.warmup, o_.check, (unsigned long long)o_.seed, o_.timeout);
  }

  void block(Communicator& comm, const Algorithm& algo, bool out) {
    const bool reduction = is_reduction(coll_), rooted = is_rooted(coll_);
    const bool do_out = o_.inplace != "only", do_in = o_.inplace != "off";
    if (out) {
      std::printf("#\n# impl: %s\n", std::string(algo.name()).c_str());
      std::printf("#%51s  %-31s  %-31s\n", "", "          out-of-place", "            in-place");
      std::printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                  "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
      std::printf("#%11s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "",
                  "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    double bus_sum = 0;
    int bus_n = 0;
    const bool progress = out && isatty(2);
    for (DType t : dtypes_)
      for (ReduceOp op : reduction ? ops_ : std::vector<ReduceOp>{ReduceOp::sum})
        for (std::uint64_t size : sizes_) {
          if (progress) std::fprintf(stderr, "\r%s %s %s       ", std::string(algo.name()).c_str(),
                                     format_size(size).c_str(), std::string(dtype_name(t)).c_str());
          const std::size_t count = count_for_bytes(coll_, size, t, comm.size());
          Half h[2];
          if (do_out) h[0] = measure(comm, algo, count, t, op, false);
          if (do_in) h[1] = measure(comm, algo, count, t, op, true);
          const BufferCounts bc = buffer_counts(coll_, count, comm.size(), o_.root, o_.root);
          const std::size_t bytes = std::max(bc.send, bc.recv) * dtype_size(t);
          if (progress) std::fprintf(stderr, "\r%40s\r", "");
          if (out) {
            std::printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, nccl_type_name(t),
                        reduction ? std::string(reduce_op_name(op)).c_str() : "none", rooted ? o_.root : -1);
            for (const Half& x : h) {
              if (!x.ran) {
                std::printf("  %7s  %6s  %6s  %6s", "-", "-", "-", "-");
                continue;
              }
              std::string w = x.wrong < 0 ? "N/A" : std::to_string(x.wrong);
              std::printf("  %7.2f  %6.2f  %6.2f  %6s", x.time_us, x.algbw, x.busbw, w.c_str());
            }
            std::printf("\n");
            std::fflush(stdout);
          }
          for (int i = 0; i < 2; ++i) {
            if (!h[i].ran) continue;
            bus_sum += h[i].busbw, ++bus_n;
            if (h[i].wrong > 0) wrong_total_ += h[i].wrong;
            if (comm.rank() == 0)
              table_.add_row({std::string(collective_name(coll_)), std::string(algo.name()), device_name(device_),
                              std::int64_t(comm.size()), std::int64_t(nodes_), std::string(dtype_name(t)),
                              reduction ? std::string(reduce_op_name(op)) : std::string("none"),
                              std::int64_t(rooted ? o_.root : -1), std::int64_t(i), std::int64_t(bytes),
                              std::int64_t(count), h[i].time_us, h[i].algbw, h[i].busbw,
                              h[i].wrong < 0 ? Cell{} : Cell{h[i].wrong}});
          }
        }
    if (out) std::printf("# Avg bus bandwidth    : %g  (%s)\n", bus_n ? bus_sum / bus_n : 0.0,
                         std::string(algo.name()).c_str());
  }

  Half measure(Communicator& comm, const Algorithm& algo, std::size_t count, DType t, ReduceOp op, bool in_place) {
    Half h;
    h.ran = true;
    CollectiveBuffers b(comm, coll_, count, t, op, o_.root, in_place);
    const bool skip = comm.rank() == hook_rank("PARBENCH_TEST_SKIP_RANK");
    const bool corrupt = comm.rank() == hook_rank("PARBENCH_TEST_CORRUPT_RANK");
    b.fill(o_.seed);
    // Library collectives (NCCL) are queued back to back and waited for once per loop, as nccl-tests does: a
    // wait after each would add its round trip to every small message.
    comm.begin_batch();
    for (int i = 0; i < o_.warmup; ++i)
      if (!skip) comm.run(b.args(), algo);
    comm.end_batch();
    comm.barrier();
    device_sync(device_);
    double mine = 0, slowest = 0;
    {
      PB_RANGE("timed batch", Category::communication, {.chunk = o_.iters});  // NVTX: a tool can count the waits
      auto t0 = std::chrono::steady_clock::now();
      comm.begin_batch();
      for (int i = 0; i < o_.iters; ++i)
        if (!skip) comm.run(b.args(), algo);
      comm.end_batch();
      device_sync(device_);
      mine = seconds_since(t0) / o_.iters;
    }
    comm.allreduce(&mine, &slowest, 1, DType::f64, ReduceOp::max, "naive");
    double wrong_mine = 0, wrong_all = 0;
    for (int round = 0; round < o_.check; ++round) {
      const std::uint64_t seed = o_.seed + 1 + std::uint64_t(round);
      b.fill(seed);
      if (!skip) comm.run(b.args(), algo);
      device_sync(device_);
      if (corrupt && count > 0) device_memcpy(device_, b.args().recv, Device{}, kSpoiled, dtype_size(t));
      wrong_mine += double(b.wrong(seed));
    }
    if (o_.check > 0) {
      comm.allreduce(&wrong_mine, &wrong_all, 1, DType::f64, ReduceOp::sum, "naive");
      h.wrong = std::int64_t(wrong_all);
    }
    const BufferCounts bc = buffer_counts(coll_, count, comm.size(), o_.root, o_.root);
    const double bytes = double(std::max(bc.send, bc.recv) * dtype_size(t));
    h.time_us = slowest * 1e6;
    h.algbw = slowest > 0 ? bytes / slowest / 1e9 : 0;
    h.busbw = h.algbw * busbw_factor(coll_, comm.size());
    return h;
  }

  Collective coll_;
  const Options& o_;
  Device device_;
  std::vector<std::uint64_t> sizes_;
  std::vector<DType> dtypes_;
  std::vector<ReduceOp> ops_;
  std::vector<std::string> impls_;
  Table table_;
  std::int64_t wrong_total_ = 0;
  int nodes_ = 1;
};

}  // namespace

int collective_bench_main(Collective c, int argc, char** argv) {
  const std::string name = "bench_" + std::string(collective_name(c));
  CLI::App app{name + ": " + std::string(collective_name(c)) +
                   " bandwidth and correctness per implementation, in nccl-tests' table. Run under mpirun "
                   "(one process per rank) or with --ranks N (threads).",
               name};
  Options o;
  add_common_options(app, o.common);
  app.add_option("-b,--minbytes", o.minbytes, "smallest size of the sweep (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxbytes, "largest size of the sweep")->capture_default_str();
  app.add_option("-f,--stepfactor", o.stepfactor, "multiply the size by this each step (default: add -i)");
  app.add_option("-i,--stepbytes", o.stepbytes, "add this each step when -f is not given")->capture_default_str();
  app.add_option("--sizes", o.sizes, "size list instead of -b/-e/-f/-i: 8:1G:x2, 1K:64M:+1M or 1K,4K,1M")
      ->check(size_list_validator());
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str()->check(CLI::Range(1, 1 << 30));
  app.add_option("-w,--warmup_iters", o.warmup, "warm-up iterations")->capture_default_str()->check(CLI::Range(0, 1 << 30));
  app.add_option("-c,--check", o.check, "data-check rounds after timing; 0 prints N/A")->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-o,--op", o.op, "sum, prod, max, min, avg or all")->capture_default_str();
  app.add_option("-d,--datatype", o.dtype, "double, float, half, bfloat16, int32, int8, uint8 (or f64 ... u8), or all")
      ->capture_default_str();
  app.add_option("-r,--root", o.root, "root of rooted collectives")->capture_default_str();
  app.add_option("--impl", o.impl,
                 "comma list of implementations: nccl, mpi (library) or naive, tree, ring, rd, rhd, oneshot "
                 "(hand-written); auto = nccl on cuda, else mpi under mpirun, else ring")
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "ranks as threads of this process (without mpirun)")->check(CLI::Range(0, 1024));
  app.add_option("--inplace", o.inplace, "both (default), only (in-place only) or off (out-of-place only)")
      ->check(CLI::IsMember({"both", "only", "off"}));
  app.add_option("--timeout", o.timeout, "seconds a collective may take before the run aborts")
      ->capture_default_str()->check(greater_than(0));
  app.add_option("--seed", o.seed, "seed of the data-check inputs")->capture_default_str();

  // Under mpirun only rank 0 reports usage errors; the others exit 2 quietly.
  const bool quiet_rank = launched_by_mpirun() && launcher_world_rank() != 0;
  std::streambuf* saved = quiet_rank ? std::cerr.rdbuf(nullptr) : nullptr;
  return run_program(app, argc, argv, [&]() -> int {
    if (saved) {
      std::cerr.rdbuf(saved);
      std::cerr.clear();
    }
    try {
      std::string choice;
      const Device device = resolve_device(o.common.device, &choice);
      auto sizes = sweep_sizes(o);
      std::vector<DType> dtypes;
      for (const auto& d : split_list(o.dtype)) {
        if (d == "all") dtypes = all_dtypes();
        else dtypes.push_back(parse_dtype(d));
      }
      std::vector<ReduceOp> ops;
      for (const auto& s : split_list(o.op)) {
        if (s == "all") ops = all_reduce_ops();
        else ops.push_back(parse_reduce_op(s));
      }
      if (dtypes.empty()) throw UsageError("-d/--datatype is empty; accepted: double, float, half, ... or all");
      if (ops.empty()) throw UsageError("-o/--op is empty; accepted: sum, prod, max, min, avg or all");
      std::vector<std::string> impls = split_list(o.impl);
      if (impls.empty()) throw UsageError("--impl is empty; accepted: auto or a comma list of implementations");
      for (const auto& i : impls)
        if (i != "auto") find_algorithm(i);  // UsageError for unknown names
      const int planned = launched_by_mpirun() ? launcher_world_size() : std::max(1, o.ranks);
      if (is_rooted(c) && (o.root < 0 || o.root >= planned))
        throw UsageError("--root " + std::to_string(o.root) + " is outside the ranks 0.." +
                         std::to_string(planned - 1));
      if (!o.common.trace.empty()) TraceRecorder::instance().enable();
      if (!choice.empty() && !o.common.quiet && !quiet_rank) std::cerr << choice << "\n";

      LaunchOptions lo;
      lo.ranks = o.ranks;
      lo.device = device;
      lo.timeout_s = o.timeout;
      int status = 0;
      run_ranks(lo, [&](Communicator& comm) {
        Bench bench(c, o, device, sizes, dtypes, ops, impls);  // per rank: threads must not share its table
        int s = bench.run(comm);
        if (comm.rank() == 0) status = s;
      });
      if (!o.common.trace.empty() && !quiet_rank) TraceRecorder::instance().write(o.common.trace);
      return status;
    } catch (const UsageError&) {
      if (quiet_rank) return 2;
      throw;
    }
  });
}

}  // namespace parbench
