// bench_train's report on rank 0: the CSV row (the columns the plots read), the text table, the memory table of
// --estimate-memory and the JSON with per-rank and per-stage detail.
#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "benchmarks/train/train_run.h"
#include "collectives/registry.h"
#include "base/error.h"
#include "app/output.h"
#include "app/report.h"
#include "core/csv_columns.h"
#include "parallel/schedule/play.h"
#include "parallel/schemes/model_parallel.h"
#include "profiles/trace.h"

namespace parbench::train_bench {

const std::vector<Column>& train_csv_columns() {
  static const std::vector<Column> cols = columns_of(csv::train::header);
  return cols;
}

std::string memory_column(MemCategory c) { return csv::train::memory_bytes[int(c)]; }

std::vector<Cell> row_by_name(const std::vector<Column>& columns, const std::map<std::string, Cell>& cells) {
  std::vector<Cell> row;
  for (const Column& c : columns) {
    auto it = cells.find(c.name);
    row.push_back(it == cells.end() ? Cell{} : it->second);
  }
  for (const auto& cell : cells)
    PB_CHECK(std::any_of(columns.begin(), columns.end(), [&](const Column& c) { return c.name == cell.first; }),
             "no CSV column '" + cell.first + "'");
  return row;
}

namespace {

// The ZeRO stage a measured run's data-parallel dimension uses.
int zero_stage_of(const TrainConfig& t) {
  return t.scheme->model_parallel ? t.dp_scheme->zero_stage : t.scheme->zero_stage;
}

// The figures every output shares, derived once from the measurements.
struct Summary {
  double step_ms, samples_per_s, tokens_per_s, tflops_per_rank, comm_max = 0;
  int heaviest = 0;  // the rank with the largest peak, whose memory is reported
  double host_waits = 0, launches = 0, device_mallocs = 0, overlap = 0;  // most over ranks; overlap: mean
  Cell bubble_measured, bubble_theory, bubble_replayed;  // empty without a pipeline
};

Summary summarize(const Options& o, const RunResult& r) {
  const TrainConfig& t = o.train;
  Summary s;
  s.step_ms = median(r.step_ms);
  s.samples_per_s = t.global_batch / (s.step_ms / 1e3);
  s.tokens_per_s = s.samples_per_s * t.model.tokens_per_sample();
  s.tflops_per_rank = model_flops_per_step(t.model, t.global_batch) / (s.step_ms / 1e3) / r.world / 1e12;
  for (int i = 0; i < r.world; ++i) {
    if (r.ranks[i].peak_bytes > r.ranks[s.heaviest].peak_bytes) s.heaviest = i;
    s.comm_max = std::max(s.comm_max, r.ranks[i].comm_bytes);
    s.host_waits = std::max(s.host_waits, r.ranks[i].host_waits);
    s.launches = std::max(s.launches, r.ranks[i].launches);
    s.device_mallocs = std::max(s.device_mallocs, r.ranks[i].device_mallocs);
    s.overlap += r.ranks[i].overlap / r.world;
  }
  if (r.pipeline) {
    // The median over steps of the mean over ranks (robust to a step slowed by something else on the machine).
    const ParallelShape& sh = r.shape;
    s.bubble_measured = median(r.step_bubble);
    s.bubble_theory = bubble_theory(make_schedule(sh.schedule, sh.pp, sh.microbatches, sh.virtual_stages));
    s.bubble_replayed = median(r.step_bubble_replayed);
  }
  return s;
}

Table csv_table(const Options& o, const Device& device, const RunResult& r, const Summary& s) {
  const TrainConfig& t = o.train;
  const ParallelShape& sh = r.shape;
  const RankStats& h = r.ranks[s.heaviest];
  std::size_t estimate_total = 0;  // closed-form parameters + gradients + optimizer state of that rank
  for (std::size_t b : h.estimate) estimate_total += b;
  auto i64 = [](double v) { return Cell(std::int64_t(v)); };
  Table csv(train_csv_columns());
  std::vector<Cell> row = {std::string(model_kind_name(t.model.kind)), std::string(t.scheme->name),
                           sh.schedule.empty() ? Cell{} : Cell(std::string(sh.schedule.name())), device_name(device),
                           std::string(implementation_name(t.impl)),
                           std::int64_t(r.world), std::int64_t(sh.tp), std::int64_t(sh.pp), std::int64_t(sh.dp),
                           std::int64_t(sh.microbatches), std::int64_t(t.global_batch),
                           std::int64_t(t.global_batch / (sh.dp * sh.microbatches)), s.step_ms, s.samples_per_s,
                           s.tokens_per_s, s.tflops_per_rank,
                           o.peak_tflops > 0 ? Cell(s.tflops_per_rank / o.peak_tflops) : Cell{}, s.bubble_measured,
                           s.bubble_theory, s.bubble_replayed, i64(h.peak_bytes)};
  for (std::size_t bytes : h.at_peak) row.push_back(i64(double(bytes)));
  for (Cell c : {i64(s.comm_max), Cell(r.loss), r.max_diff ? Cell(*r.max_diff) : Cell{},
                 Cell(std::int64_t(estimate_total)), Cell(std::int64_t(sh.virtual_stages)),
                 Cell(std::int64_t(t.scheme->sequence_parallel)), Cell(std::int64_t(zero_stage_of(t))),
                 Cell(std::string("none")), Cell(std::int64_t(0))})
    row.push_back(c);
  row.resize(csv.columns().size());  // the predicted time split stays empty
  auto set = [&](const char* name, Cell c) {
    for (std::size_t i = 0; i < row.size(); ++i)
      if (csv.columns()[i].name == name) row[i] = c;
  };
  set(csv::train::host_waits_per_step, i64(s.host_waits));
  set(csv::train::launches_per_step, i64(s.launches));
  set(csv::train::device_mallocs_per_step, i64(s.device_mallocs));
  set(csv::train::overlap, s.overlap);
  if (r.pipeline) set(csv::train::partition, partition_text(sh.stage_blocks));
  csv.add_row(std::move(row));
  return csv;
}

void print_table(const Options& o, const RunResult& r, const Summary& s) {
  const TrainConfig& t = o.train;
  const ParallelShape& sh = r.shape;
  const Cell dash = std::string("-");
  auto or_dash = [&](const Cell& c) { return r.pipeline ? c : dash; };
  Table text({{"scheme"}, {"schedule"}, {"dp.tp.pp"}, {"mb"}, {"step_ms", 2}, {"samples/s", 1}, {"tokens/s", 0},
              {"TFLOP/s/rank", 5}, {"bubble", 3}, {"theory", 3}, {"replay", 3}, {"peak_MiB", 2},
              {"comm_MiB/step", 3}, {"overlap", 3}, {"waits/step", 0}, {"loss", 5}, {"diff_vs_single", 3}});
  text.add_row({std::string(t.scheme->name), sh.schedule.empty() ? dash : Cell(std::string(sh.schedule.name())),
                std::to_string(sh.dp) + "." + std::to_string(sh.tp) + "." + std::to_string(sh.pp),
                std::int64_t(sh.microbatches), s.step_ms, s.samples_per_s, s.tokens_per_s, s.tflops_per_rank,
                or_dash(s.bubble_measured), or_dash(s.bubble_theory), or_dash(s.bubble_replayed),
                r.ranks[s.heaviest].peak_bytes / 1048576.0, s.comm_max / 1048576.0, s.overlap, s.host_waits, r.loss,
                r.max_diff ? Cell(*r.max_diff) : dash});
  text.write_text(std::cout);
  if (r.pipeline)
    std::cout << "partition: " << partition_text(sh.stage_blocks) << " blocks per virtual stage (--partition "
              << t.partition.name() << ")\n";
}

void print_memory(const RunResult& r, const Summary& s) {
  const RankStats& h = r.ranks[s.heaviest];
  std::cout << "\nmemory of rank " << s.heaviest << " (largest peak), bytes: measured at peak vs closed form\n";
  Table mem({{"category"}, {"measured"}, {"closed_form"}});
  for (int c = 0; c < kMemCategories; ++c) {
    const bool state = c <= int(MemCategory::optimizer);
    mem.add_row({std::string(mem_category_name(MemCategory(c))), std::int64_t(h.at_peak[std::size_t(c)]),
                 state ? Cell(std::int64_t(h.estimate[std::size_t(c)])) : Cell(std::string("-"))});
  }
  mem.write_text(std::cout);
}

nlohmann::json rank_json(const Options& o, const RunResult& r, int rank) {
  const ParallelShape& sh = r.shape;
  const RankStats& st = r.ranks[std::size_t(rank)];
  const ParallelGrid g = ParallelGrid::of(rank, sh.dp, sh.tp, sh.pp);
  nlohmann::json pr = {{"rank", rank}, {"dp_rank", g.dp_rank}, {"tp_rank", g.tp_rank}, {"pp_rank", g.pp_rank},
                       {"peak_bytes", st.peak_bytes}, {"comm_bytes", st.comm_bytes},
                       {"host_device_bytes", st.host_device_bytes}, {"host_waits_per_step", st.host_waits},
                       {"launches_per_step", st.launches}, {"device_mallocs_per_step", st.device_mallocs},
                       {"overlap", st.overlap}};
  if (r.pipeline) {
    pr["busy_ms"] = st.busy_ms / o.steps;
    pr["pipeline_span_ms"] = st.span_ms / o.steps;
    pr["bubble_median"] = st.bubble;
    pr["peak_microbatches_in_flight"] = st.in_flight;
  }
  for (int c = 0; c < kMemCategories; ++c)
    pr[std::string(mem_category_name(MemCategory(c))) + "_bytes"] = double(st.at_peak[std::size_t(c)]);
  return pr;
}

void write_json(const Options& o, const RunResult& r, const Table& csv) {
  nlohmann::json j = {{"results", csv.to_json()}, {"per_rank", nlohmann::json::array()}, {"step_ms", r.step_ms}};
  for (int rank = 0; rank < r.world; ++rank) j["per_rank"].push_back(rank_json(o, r, rank));
  if (r.pipeline) {
    j["step_bubble"] = r.step_bubble;
    j["step_bubble_replayed"] = r.step_bubble_replayed;
    // Per stage: the mean of its ranks' median bubbles.
    const ParallelShape& sh = r.shape;
    std::vector<double> stage_bubble(std::size_t(sh.pp), 0.0);
    for (int rank = 0; rank < r.world; ++rank)
      stage_bubble[std::size_t(ParallelGrid::of(rank, sh.dp, sh.tp, sh.pp).pp_rank)] +=
          r.ranks[std::size_t(rank)].bubble / (sh.dp * sh.tp);
    j["per_stage"] = nlohmann::json::array();
    for (int st = 0; st < sh.pp; ++st) j["per_stage"].push_back({{"stage", st}, {"bubble_measured", stage_bubble[st]}});
  }
  write_file_atomically(o.common.json, j.dump(2) + "\n");
}

}  // namespace

std::string csv_header() { return Table(train_csv_columns()).header_csv(); }

int report(const Options& o, const Device& device, const RunResult& r, CsvRowFile* csv_file) {
  const Summary s = summarize(o, r);
  const Table csv = csv_table(o, device, r, s);
  if (!o.common.quiet) print_table(o, r, s);
  if (o.estimate_memory) print_memory(r, s);
  if (csv_file) csv_file->append(csv.csv_line(csv.rows().at(0)));
  if (!o.common.json.empty()) write_json(o, r, csv);
  if (!o.common.trace.empty()) TraceRecorder::instance().write(o.common.trace);
  if (o.check && o.check_tolerance > 0 && r.max_diff && *r.max_diff > o.check_tolerance) {
    std::cerr << "bench_train: parameters differ from the single-rank run by " << *r.max_diff
              << " (relative), more than --check-tolerance " << o.check_tolerance << "\n";
    return 1;
  }
  return 0;
}

}  // namespace parbench::train_bench
