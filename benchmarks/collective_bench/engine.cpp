// Collective benchmark engine: starts the ranks (mpirun processes or threads, t x g per process), splits them
// into groups (NCCL_TESTS_SPLIT), sweeps the sizes per implementation, times (timing.h), checks, and prints
// nccl-tests' output (report.h) on world rank 0, plus our CSV/JSON rows.
#include "engine.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>

#include "collectives/registry.h"
#include "collectives/table/alltoallv_split.h"
#include "collectives/bootstrap.h"
#include "collectives/table/collective_table.h"
#include "collectives/datacheck.h"
#include "collectives/communicator/fault_injection.h"
#include "collectives/table/measurement.h"
#include "app/program.h"
#include "collectives/hybrid.h"
#include "base/error.h"
#include "core/current_stream.h"
#include "core/graph.h"
#include "core/memory.h"
#include "core/stream.h"
#include "app/interrupt.h"
#include "app/output.h"
#include "app/report.h"
#include "app/sizes.h"
#include "engine_notes.h"
#include "block_reports.h"
#include "nccl_choices.h"
#include "sweep_points.h"
#include "options.h"
#include "profiles/trace.h"
#include "nccl_tests_output.h"
#include "sweep_control.h"
#include "timing.h"

namespace parbench {
namespace {

// Test hooks (environment, so that no user option exists for them): PARBENCH_TEST_SKIP_RANK=R makes rank R skip
// the measured collective, as a misbehaving rank would (the others must time out); PARBENCH_TEST_CORRUPT_RANK=R
// makes rank R spoil its first output element in every check round (the check must catch each);
// PARBENCH_TEST_RANK_TIME_US=X replaces rank r's measured times by (r + 1) X microseconds (so -a's reduction
// has known results) and its -I iteration i's by (r + 1) X (1 + i mod 4); PARBENCH_TEST_LATE_RANK=R makes rank R
// start each timed iteration 100 ms late (what -z 3 leaves out of the times).
int hook_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

// NaN in every float type (the integer types read it as -1 or 255, which only usually differs from the expected).
constexpr unsigned char kSpoiled[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

std::vector<Column> csv_columns() { return columns_of(csv::collective::header); }

class Bench {
 public:
  // `rows`: the result files, given to world rank 0 only (the one rank that writes).
  // `expect`: --expect's system, or null.
  Bench(Collective c, const BenchOptions& o, const BenchPlan& p, Device d, NcclReport& report, StreamingTable* rows,
        const Expectation* expect)
      : coll_(c), o_(o), p_(p), device_(d), report_(report), rows_(rows), expect_(expect),
        control_(rows ? rows->existing_rows() : std::vector<std::vector<std::string>>{}) {}

  // Runs on every rank; returns the program's exit status (meaningful on rank 0).
  int run(Communicator& world) {
    device_ = world.device();  // this rank's GPU: --device cuda:N names rank 0's, the others follow
    if (graph_mode()) graph_.emplace(device_);
    const bool out = world.rank() == 0 && !o_.common.quiet;
    const int color = p_.split.color(world.rank());
    std::optional<Communicator> group;  // NCCL_TESTS_SPLIT: this rank's group runs the test
    if (!p_.split.op.empty()) group.emplace(world.split(color, world.rank()));
    Communicator& comm = group ? *group : world;
    for (int root : p_.roots)
      if (root >= comm.size())
        throw UsageError("--root " + std::to_string(root) + " is outside the ranks 0.." +
                         std::to_string(comm.size() - 1) + " of a group");
    const std::string split = alltoallv_split_note(comm);
    const int nodes = world.nodes();
    check_buffers_fit(coll_, sweep_points(), comm.size(), device_.on_host() ? (world.size() + nodes - 1) / nodes : 1,
                      o_.unalign, device_, p_.max_memory);
    ranks_ = gather_rank_info(world, color, device_);
    const std::vector<RankInfo>& ranks = ranks_;
    std::vector<std::string> notes = run_notes(o_, p_, world, comm, nodes, device_);
    if (!split.empty()) notes.push_back(split);
    if (out) report_.print_header(ranks, notes);
    std::string refusals;
    const int ran_blocks = run_implementations(world, comm, nodes, out, refusals);
    if (!stopped_ && ran_blocks > 0) stopped_ = SweepControl::agree(world, false).stop_signal;  // a late signal
    if (o_.memory && !stopped_) memory_report(world, p_, out);
    if (out) report_.print_end();
    if (rows_) report_.json_finish(wrong_total_, bus_n_ ? bus_sum_ / bus_n_ : 0.0);  // the final end_time
    if (ran_blocks == 0)
      throw UsageError("none of the implementations asked for can run " + std::string(collective_name(coll_)) +
                       " here:" + refusals);
    if (stopped_) {
      if (world.rank() == 0) print_stop_line();
      return exit_status_for_signal(stopped_);
    }
    if (wrong_total_ > 0) {
      if (world.rank() == 0)
        std::fprintf(stderr, "error: %lld wrong elements in the data check\n", (long long)wrong_total_);
      return 1;
    }
    return 0;
  }

 private:
  // -G on GPUs: the timed operations and each check round are captured into a CUDA graph (timing.h).
  bool graph_mode() const { return o_.graph > 0 && device_.kind == DeviceKind::cuda; }

  // One block per implementation asked for that can run; the others' reasons printed and added to `refusals`.
  // Returns the number of blocks run.
  int run_implementations(Communicator& world, Communicator& comm, int nodes, bool out, std::string& refusals) {
    int ran_blocks = 0;
    for (const std::string& name : p_.impls) {
      const Algorithm* named = find_implementation(name);  // null: auto
      const Algorithm& algo = named ? *named : choose_automatically(coll_, comm);
      if (std::string why = refusal(algo, comm); !why.empty()) {
        if (out) std::printf("#\n# %s: not run: %s\n", std::string(algo.name()).c_str(), why.c_str());
        refusals += "\n  " + std::string(algo.name()) + ": " + why;
        continue;
      }
      ++ran_blocks;
      block(world, comm, algo, nodes, out);
      if (algo.name() == "nccl") ran_blocks += run_nccl_choices(world, comm, algo, nodes, out, refusals);
      if (stopped_) break;
    }
    return ran_blocks;
  }

  // --nccl-algo/--nccl-proto: a block per choice, after NCCL's own (nccl_choices.h).
  int run_nccl_choices(Communicator& world, Communicator& comm, const Algorithm& nccl, int nodes, bool out,
                       std::string& refusals) {
    int ran = 0;
    for (const NcclChoice& choice : nccl_choices(o_)) {
      if (stopped_) break;
      NcclChoiceComm chosen(world, comm, coll_, nccl, choice);
      if (!chosen.refusal().empty()) {
        if (out) std::printf("#\n# %s: not run: %s\n", choice.label().c_str(), chosen.refusal().c_str());
        refusals += "\n  " + choice.label() + ": " + chosen.refusal();
        continue;
      }
      label_ = choice.label();
      block(world, chosen.comm(), nccl, nodes, out);
      label_.clear(), ++ran;
    }
    return ran;
  }
  // The implementation's name in the rows: a --nccl-algo choice's label while its block runs.
  std::string impl_name(const Algorithm& algo) const { return label_.empty() ? std::string(algo.name()) : label_; }

  // Why `algo` does not run here ("" when it does): the implementation's own reason, or why -G cannot capture it.
  std::string refusal(const Algorithm& algo, const Communicator& comm) const {
    std::string why = algo.unsupported(coll_, comm);
    if (why.empty() && graph_mode())
      if (std::string c = algo.capture_refusal(coll_); !c.empty()) why = "-G " + std::to_string(o_.graph) + ": " + c;
    return why;
  }

  // The buffers' call, on the graph's stream under -G.
  CollArgs call_args(CollectiveBuffers& b) const {
    CollArgs a = b.args();
    if (graph_) a.stream = graph_->stream.native();
    return a;
  }

  void block(Communicator& world, Communicator& comm, const Algorithm& algo, int nodes, bool out) {
    if (out) {
      if (p_.impls.size() > 1 || !nccl_choices(o_).empty()) std::printf("#\n# impl: %s\n", impl_name(algo).c_str());
      report_.print_table_header();
    }
    BlockTally tally;
    const bool progress = out && isatty(2);
    int skipped = 0;
    BlockReports reports;
    if (expect_) reports.expected.emplace(*expect_, coll_, std::string(algo.name()), comm.size(), comm.group_nodes());
    if (o_.outliers && out) reports.outliers.emplace(world, ranks_);
    for (int cycle = 0; (o_.cycles == 0 || cycle < o_.cycles) && !stopped_; ++cycle)
      for (const SweepPoint& pt : sweep_points()) {
        RowResult row = plan_row(coll_, comm.size(), pt);
        const SweepControl::Decision d = SweepControl::agree(world, rows_ && resumed(algo, comm.size(), nodes, row));
        if (d.stop_signal) {
          stopped_ = d.stop_signal;
          stopped_at_ = describe(algo, row);
          break;
        }
        if (d.skip) {
          ++skipped;
          continue;
        }
        if (progress) std::fprintf(stderr, "\r%s %s %s       ", impl_name(algo).c_str(),
                                   format_size(pt.size).c_str(), std::string(dtype_name(pt.dtype)).c_str());
        measure_row(world, comm, algo, row, pt.op);
        if (progress) std::fprintf(stderr, "\r%40s\r", "");
        if (out) report_.print_row(row);
        record_row(algo, comm.size(), nodes, row, reports.add(row, o_.cputime), tally);
      }
    if (out && skipped > 0) std::printf("# resume: %d sizes already in %s skipped\n", skipped, o_.common.csv.c_str());
    if (out) report_.print_block_footer(tally.wrong, tally.bus_n ? tally.bus_sum / tally.bus_n : 0.0);
    if (out) reports.print();
  }

  // A block's sums for its footer (the run's own are the members below).
  struct BlockTally {
    double bus_sum = 0;
    int bus_n = 0;
    std::int64_t wrong = 0;
  };
  // A measured row into the block's and the run's sums and into the result files.
  void record_row(const Algorithm& algo, int ranks, int nodes, const RowResult& row, std::optional<double> expected_s,
                  BlockTally& tally) {
    for (int i = 0; i < 2; ++i) {
      const HalfResult& h = row.half[i];
      if (!h.ran) continue;
      bus_sum_ += h.busbw, ++bus_n_, tally.bus_sum += h.busbw, ++tally.bus_n;
      if (h.wrong > 0) tally.wrong += h.wrong, wrong_total_ += h.wrong;
      if (rows_) add_csv_row(algo, ranks, nodes, row, i, expected_s);
    }
    if (!rows_) return;
    ++rows_written_;
    if (!o_.json_file.empty())
      report_.json_row(o_.json_file, row, impl_name(algo), ranks_, wrong_total_, bus_n_ ? bus_sum_ / bus_n_ : 0.0);
  }

  // alltoallv's split in words for the header, once its environment and the sizes passed its checks (UsageError).
  std::string alltoallv_split_note(const Communicator& comm) const {
    if (coll_ != Collective::alltoallv) return {};
    check_alltoallv_run(alltoallv_pattern(), p_.sizes, comm.size());
    return "alltoallv's split: " + alltoallv_pattern().describe();
  }

  std::vector<SweepPoint> sweep_points() const { return parbench::sweep_points(p_); }

  // The CSV key of half `half` of `row` (the columns SweepControl compares).
  std::string row_key(const Algorithm& algo, int ranks, int nodes, const RowResult& row, int half) const {
    return SweepControl::key({std::string(collective_name(coll_)), impl_name(algo), device_name(device_),
                              std::to_string(ranks), std::to_string(nodes), std::string(dtype_name(row.dtype)),
                              row.redop, std::to_string(row.root), std::to_string(half), std::to_string(row.bytes)});
  }

  // --resume: every half this run would measure is in the CSV already.
  bool resumed(const Algorithm& algo, int ranks, int nodes, const RowResult& row) const {
    for (int half = 0; half < 2; ++half) {
      const bool runs = half == 0 ? o_.inplace != "only" : o_.inplace != "off";
      if (runs && !control_.has(row_key(algo, ranks, nodes, row, half))) return false;
    }
    return true;
  }

  std::string describe(const Algorithm& algo, const RowResult& row) const {
    std::string where = std::string(collective_name(coll_)) + ", implementation " + impl_name(algo) +
                        ", size " + std::to_string(row.bytes) + " bytes (" + std::string(dtype_name(row.dtype));
    if (row.redop != "none") where += ", " + row.redop;
    if (row.root >= 0) where += ", root " + std::to_string(row.root);
    return where + ")";
  }

  // One line on stderr: where the sweep stopped and where its rows are.
  void print_stop_line() const {
    std::string files;
    for (const std::string* f : {&o_.common.csv, &o_.common.json, &o_.json_file})
      if (!f->empty()) files += (files.empty() ? "" : ", ") + *f;
    std::string line = "bench_" + std::string(collective_name(coll_)) + ": stopped by " + signal_name(stopped_) +
                       (stopped_at_.empty() ? " after the last measurement" : " before " + stopped_at_) + "; " +
                       std::to_string(rows_written_) + " completed sizes" +
                       (files.empty() ? "" : " are in " + files) + "\n";
    std::fputs(line.c_str(), stderr);
  }

  void measure_row(Communicator& world, Communicator& comm, const Algorithm& algo, RowResult& row, ReduceOp op) {
    if (o_.inplace != "only") row.half[0] = measure(world, comm, algo, row, op, false);
    if (o_.inplace != "off") row.half[1] = measure(world, comm, algo, row, op, true);
    row.timestamp = o_.timestamps ? time_of_day() : "";  // nccl-tests takes it as the row ends
  }

  HalfResult measure(Communicator& world, Communicator& comm, const Algorithm& algo, const RowResult& row,
                     ReduceOp op, bool in_place) {
    HalfResult h;
    h.ran = true;
    const int root = std::max(row.root, 0);
    // What a failure from here on names: the user's operation, not the helper calls around it.
    const std::string what = describe_call(coll_, algo.name(), row.bytes, row.count, row.dtype, comm.size()) +
                             (in_place ? ", in place" : ", out of place");
    MeasurementScope measuring(what, coll_, algo.name());
    if (launched_as_processes() || world.rank() == 0)
      set_signal_context("rank " + std::to_string(world.rank()) + " measures " + what);
    CollectiveBuffers b(comm, coll_, row.count, row.dtype, op, root, in_place, std::size_t(o_.unalign),
                        nccl_buffers(algo));
    b.fill(o_.seed);
    TimingConfig tc;
    tc.iters = o_.iters, tc.warmup = o_.warmup, tc.agg = o_.agg;
    tc.blocking = o_.blocking == kIterAlone && o_.graph > 0 ? kBatched : o_.blocking;  // nccl-tests' -z 3 -G
    tc.per_iter = o_.per_iter != 0;
    tc.skip = world.rank() == hook_int("PARBENCH_TEST_SKIP_RANK");
    if (world.rank() == hook_int("PARBENCH_TEST_LATE_RANK")) tc.late_s = 0.1;
    tc.world = &world;
    tc.graph_launches = graph_mode() ? o_.graph : 0;
    Timing mine = time_collective(comm, algo, call_args(b), tc);
    if (const int fake = hook_int("PARBENCH_TEST_RANK_TIME_US"); fake > 0) {
      const double s = (world.rank() + 1) * fake * 1e-6;
      mine.time = mine.cpu_time = s;
      for (std::size_t i = 0; i < mine.iter_times.size(); ++i) mine.iter_times[i] = s * double(1 + i % 4);
    }
    h.t = reduce_over_ranks(world, mine, o_.average);
    if (o_.per_iter) h.per_iter = gather_iteration_times(world, mine.iter_times, o_.iters, o_.per_iter_skip, ranks_, o_.outliers);
    if (o_.outliers) h.rank_own = gather_own_times(world, mine.own_time);
    h.wrong = check(world, comm, algo, b, tc.skip);
    const double time = o_.cputime ? h.t.cpu_time : h.t.time;
    h.algbw = time > 0 ? double(row.bytes) / time / 1e9 * algbw_factor(coll_, comm.size()) : 0;
    h.busbw = h.algbw * busbw_factor(coll_, comm.size());
    return h;
  }

  // -R/-D: the nccl rows' buffers registered with NCCL (nccl_registration.h); the other implementations' plain.
  NcclBufferMode nccl_buffers(const Algorithm& algo) const {
    if (device_.kind != DeviceKind::cuda || !algo.name().starts_with("nccl")) return {};
    return {o_.registration, nccl_device_variant(algo.name())};
  }

  // -c rounds of fresh inputs, one call each, counted over every rank of the world; -1 for -c 0.
  std::int64_t check(Communicator& world, Communicator& comm, const Algorithm& algo, CollectiveBuffers& b,
                     bool skip) {
    const bool corrupt = world.rank() == hook_int("PARBENCH_TEST_CORRUPT_RANK");
    double wrong_mine = 0, wrong_all = 0;
    for (int round = 0; round < o_.check; ++round) {
      const std::uint64_t seed = o_.seed + 1 + std::uint64_t(round);
      b.fill(seed);
      fault_point(world);
      if (faults_on()) arm_flip_for_next_call(world.rank());
      if (!skip) run_checked_call(comm, algo, b);
      if (faults_on()) disarm_flip();
      device_synchronize(device_);
      if (corrupt && b.args().count > 0)
        device_memcpy(device_, b.args().recv, Device{}, kSpoiled, dtype_size(b.args().dtype));
      CollectiveBuffers::FirstWrong first;
      const std::size_t wrong = b.wrong(seed, &first);
      if (wrong > 0) report_wrong(world, wrong, first, round);
      wrong_mine += double(wrong);
    }
    if (o_.check == 0) return -1;
    world.allreduce(&wrong_mine, &wrong_all, 1, DType::f64, ReduceOp::sum, &find_algorithm("naive"));
    return std::int64_t(wrong_all);
  }

  // A check round's call; under -G captured alone and launched once, as nccl-tests checks graphs.
  void run_checked_call(Communicator& comm, const Algorithm& algo, CollectiveBuffers& b) {
    if (!graph_mode()) return comm.run(b.args(), algo);
    comm.begin_batch();
    {
      StreamGraph graph(graph_->stream.native());
      comm.run(call_args(b), algo);
      graph.end();
      graph.launch();
    }
    comm.end_batch();
  }

  void add_csv_row(const Algorithm& algo, int ranks, int nodes, const RowResult& row, int half,
                   std::optional<double> expected_s) {
    if (control_.has(row_key(algo, ranks, nodes, row, half))) return;  // resumed: one half was written before
    const HalfResult& h = row.half[half];
    const double measured_s = o_.cputime ? h.t.cpu_time : h.t.time;
    std::vector<Cell> cells{std::string(collective_name(coll_)), impl_name(algo), device_name(device_),
                            std::int64_t(ranks), std::int64_t(nodes), std::string(dtype_name(row.dtype)), row.redop,
                            std::int64_t(row.root), std::int64_t(half), std::int64_t(row.bytes),
                            std::int64_t(row.count), measured_s * 1e6, h.algbw, h.busbw,
                            h.wrong < 0 ? Cell{} : Cell{h.wrong}, expected_s ? Cell{*expected_s * 1e6} : Cell{},
                            expected_s ? Cell{percent_of_expected(*expected_s, measured_s)} : Cell{}};
    for (Cell& c : own_time_cells(h)) cells.push_back(std::move(c));
    rows_->add_row(std::move(cells));
  }

  Collective coll_;
  const BenchOptions& o_;
  const BenchPlan& p_;
  Device device_;
  NcclReport& report_;
  StreamingTable* rows_;
  const Expectation* expect_;
  SweepControl control_;
  std::vector<RankInfo> ranks_;
  // -G on GPUs: as nccl-tests, a non-blocking stream per rank where every measured and checked call runs, made the
  // thread's current stream so that the buffers' fills and reads (device_memcpy) are ordered with the graphs there.
  struct GraphStream {
    explicit GraphStream(const Device& d) : stream(d, true), current(stream.native()) {}
    Stream stream;
    CurrentStream current;
  };
  std::optional<GraphStream> graph_;
  int stopped_ = 0;         // the signal that stopped the sweep
  std::string stopped_at_;  // the row it stopped before
  std::string label_;       // the block's implementation name where it is not the algorithm's
  int rows_written_ = 0;    // sizes measured and written by this run
  std::int64_t wrong_total_ = 0;
  double bus_sum_ = 0;
  int bus_n_ = 0;
};

// Runs `body` on every rank: mpirun processes (with -t x -g ranks in each) or threads.
void launch_ranks(const BenchOptions& o, const BenchPlan& plan, Device device,
                  const std::function<void(Communicator&)>& body) {
  LaunchOptions lo;
  lo.ranks = launched_as_processes() ? o.ranks : plan.ranks_per_process;
  lo.device = device;
  lo.timeout_s = plan.timeout;
  if (launched_as_processes() && plan.ranks_per_process > 1)
    run_ranks(lo, [&](Communicator& process) { run_ranks_per_process(process, plan.ranks_per_process, body); });
  else
    run_ranks(lo, body);
}

}  // namespace

int collective_bench_main(Collective c, int argc, char** argv) {
  const std::string name = "bench_" + std::string(collective_name(c));
  const ProgramText text{name + ": " + std::string(collective_name(c)) +
                              " bandwidth and correctness per implementation, in the layout and with the options "
                              "of nccl-tests' " + std::string(collective_info(c).nccl_tests) + "_perf. Run under "
                              "mpirun (one process per rank) or with -t/-g or --ranks N (threads).",
                          name};
  BenchOptions o;

  // Under mpirun only rank 0 reports usage errors; the others exit 2 quietly.
  const bool quiet_rank = launcher_world_rank() != 0;
  std::streambuf* saved = quiet_rank ? std::cerr.rdbuf(nullptr) : nullptr;
  return run_program(text, [&](CLI::App& app) { add_bench_options(app, o); }, argc, argv, [&](const CLI::App&) -> int {
    if (saved) {
      std::cerr.rdbuf(saved);
      std::cerr.clear();
    }
    try {
      std::string choice;
      const Device device = apply_tests_device(resolve_device(o.common.device, &choice), o);
      BenchPlan plan = resolve_plan(c, o);
      fault_plan();  // a bad PARBENCH_FAULT is a usage error before any work
      check_run_options(o, device);
      apply_nccl_device_options(c, o, device, plan);
      check_nccl_choice_options(o, plan);
      if (!o.max_memory.empty()) plan.max_memory = parse_size_option("--max-memory", o.max_memory);
      set_transport_wait_accounting(o.outliers);
      std::optional<Expectation> expect;  // a bad --expect is a usage error before any file is written
      if (!o.expect.empty()) expect.emplace(o.expect);
      std::optional<StreamingTable> rows;  // the writing process's result files, opened before any work
      if (!quiet_rank)
        rows.emplace(csv_columns(), o.common.csv, o.common.json,
                     o.resume ? CsvRowFile::Mode::append : CsvRowFile::Mode::replace);
      std::string kept = o.common.csv.empty() ? "" : "; completed rows are in " + o.common.csv;
      install_stop_handlers(quiet_rank ? "" : name + ": stopped at once by a second SIGNAL" + kept);
      if (!o.common.trace.empty()) TraceRecorder::instance().enable();
      if (!choice.empty() && !o.common.quiet && !quiet_rank) std::cerr << choice << "\n";
      NcclReport report = make_report(name, o, plan, argc, argv);
      int status = 0;
      launch_ranks(o, plan, device, [&](Communicator& comm) {
        Bench bench(c, o, plan, device, report, comm.rank() == 0 && rows ? &*rows : nullptr,
                    expect ? &*expect : nullptr);
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
