// bench_train --search: every layout of the model on --gpus GPUs predicted on --system; the best --top printed
// (and written as CSV rows like --simulate's), then each (tp, pp) family's best and why it lost.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/output.h"
#include "app/report.h"
#include "base/clock.h"
#include "benchmarks/train/train_run.h"
#include "base/error.h"
#include "base/text.h"
#include "predict/calibrate.h"
#include "predict/search.h"

namespace parbench::train_bench {

namespace {

std::string describe(const predict::Layout& l) {
  std::string s = "tp " + std::to_string(l.tp) + " pp " + std::to_string(l.pp) + " dp " + std::to_string(l.dp) +
                  " mbs " + std::to_string(l.micro_batch);
  if (l.pp > 1)
    s += " " + std::string(l.schedule.name()) + (l.virtual_stages > 1 ? " v " + std::to_string(l.virtual_stages) : "");
  if (l.sequence_parallel) s += " sp";
  if (l.zero_stage > 0) s += " zero" + std::to_string(l.zero_stage);
  if (l.recompute != predict::Recompute::none) s += " recompute " + predict::recompute_name(l.recompute);
  return s;
}

void print_result(const predict::SearchResult& r, const predict::SystemModel& sys, int gpus, int top, double secs) {
  std::cout << "# search on " << gpus << " GPUs of " << sys.name << ": " << r.enumerated << " layouts, "
            << r.fitting.size() << " fit in memory, " << secs << " s\n";
  Table best({{"rank"}, {"layout"}, {"step_ms", 1}, {"tokens/s", 0}, {"MFU", 3}, {"bubble_ms", 1}, {"comm_ms", 1},
              {"peak_GiB", 2}});
  for (std::size_t i = 0; i < r.fitting.size() && int(i) < top; ++i) {
    const auto& c = r.fitting[i];
    const predict::TimeSplit& t = c.prediction.time;
    best.add_row({std::int64_t(i + 1), describe(c.layout), 1e3 * t.step, c.prediction.tokens_per_s, c.prediction.mfu,
                  1e3 * t.bubble, 1e3 * (t.tp_comm + t.pp_comm + t.dp_comm),
                  c.prediction.peak_bytes / (1024.0 * 1024 * 1024)});
  }
  if (r.fitting.empty()) std::cout << "# no layout fits in " << sys.gpu.hbm_bytes / 1e9 << " GB per GPU\n";
  else best.write_text(std::cout);
  std::cout << "\n# each (tp, pp) family's best layout and why it lost to the winner\n";
  Table fam({{"tp"}, {"pp"}, {"best layout"}, {"step_ms", 1}, {"reason"}});
  for (const auto& f : r.families)
    fam.add_row({std::int64_t(f.tp), std::int64_t(f.pp), describe(f.best.layout),
                 f.any_fits ? Cell(1e3 * f.best.prediction.time.step) : Cell(std::string("-")), f.reason});
  fam.write_text(std::cout);
}

}  // namespace

int search(const Options& o) {
  const predict::SystemModel sys = predict::load_system(o.system);
  Table csv(train_csv_columns());
  for (int gpus : parse_gpu_list(o.gpus)) {
    Options base_options = o;
    base_options.train.tp = base_options.train.pp = 1, base_options.train.dp = 0;
    base_options.train.virtual_stages = 1, base_options.train.microbatches = 0;
    base_options.train.micro_batch = 1, base_options.zero = 0, base_options.sp = false;
    base_options.recompute = "none";
    const predict::Layout base = layout_for(base_options, gpus, sys);
    const auto t0 = std::chrono::steady_clock::now();
    const predict::SearchResult r = predict::search_layouts(base, sys);
    const double secs = seconds_since(t0);
    if (!o.common.quiet) print_result(r, sys, gpus, o.top, secs);
    for (std::size_t i = 0; i < r.fitting.size() && int(i) < o.top; ++i)
      csv.add_row(row_by_name(csv.columns(), predicted_cells(r.fitting[i].layout, r.fitting[i].prediction, sys)));
  }
  if (!o.common.csv.empty()) csv.write_csv(o.common.csv, /*append=*/true);
  if (!o.common.json.empty()) csv.write_json(o.common.json);
  return 0;
}

namespace {

void report_link_fits(const Options& o, const std::vector<predict::CollectiveSample>& samples) {
  const std::vector<predict::LinkFit> fits = predict::fit_links(samples);
  Table t({{"collective"}, {"impl"}, {"ranks"}, {"sizes"}, {"alpha_us", 3}, {"link_GBps", 3}, {"mean_err_%", 1},
           {"max_err_%", 1}});
  for (const auto& f : fits)
    t.add_row({f.collective, f.impl, std::int64_t(f.ranks), std::int64_t(f.samples), f.alpha * 1e6, f.gbps(),
               100 * f.mean_rel_error, 100 * f.max_rel_error});
  if (!o.common.quiet) {
    std::cout << "# alpha-beta fit per (collective, impl, ranks): time = steps x alpha + volume x bytes / link_GBps\n";
    t.write_text(std::cout);
  }
  if (!o.common.csv.empty()) t.write_csv(o.common.csv);
}

void print_curve(const std::string& what, const predict::CurveFit& f) {
  std::cout << "# " << what << ": " << f.samples << " rows, error mean " << number_text(100 * f.mean_rel_error, 3)
            << "%, max " << number_text(100 * f.max_rel_error, 3) << "%\n";
  Table t({{"from_size"}, {"efficiency"}});
  for (const auto& [threshold, eff] : f.curve.points) t.add_row({number_text(threshold, 6), number_text(eff, 4)});
  t.write_text(std::cout);
}

// Measured linears as a table: each GEMM's time and its rate over the matrix peak; then those rates as a curve by
// GFLOP (printed, not applied: what the system's matrix curve would be if these GEMMs stood for every size).
void print_linears(const std::vector<predict::MeasuredLinear>& linears, double peak_tflops) {
  std::cout << "# measured linears (bench_kernels --linear rows; efficiency against " << number_text(peak_tflops, 6)
            << " TFLOP/s)\n";
  Table t({{"tokens"}, {"in"}, {"out"}, {"forward_us"}, {"input_gradient_us"}, {"weight_gradient_us"},
           {"forward_eff"}, {"input_gradient_eff"}, {"weight_gradient_eff"}});
  std::vector<std::pair<double, double>> by_gflop;
  for (const predict::MeasuredLinear& m : linears) {
    const double flops = 2 * m.tokens * m.in * m.out;
    auto rate = [&](double s) { return flops / s / (peak_tflops * 1e12); };
    for (double s : {m.forward_s, m.input_gradient_s, m.weight_gradient_s}) by_gflop.push_back({flops / 1e9, rate(s)});
    t.add_row({number_text(m.tokens, 9), number_text(m.in, 9), number_text(m.out, 9), number_text(m.forward_s * 1e6, 5),
               number_text(m.input_gradient_s * 1e6, 5), number_text(m.weight_gradient_s * 1e6, 5),
               number_text(rate(m.forward_s), 3), number_text(rate(m.input_gradient_s), 3),
               number_text(rate(m.weight_gradient_s), 3)});
  }
  t.write_text(std::cout);
  print_curve("matrix efficiency by GFLOP of the measured linears' GEMMs (not applied)", predict::fit_curve(by_gflop));
}

// Measured attention as a table: each shape's forward and backward time.
void print_attention(const std::vector<predict::MeasuredAttention>& attention) {
  std::cout << "# measured attention (scripts/sdpa_compare.py's SDPA times)\n";
  Table t({{"batch"}, {"heads"}, {"seq"}, {"head_dim"}, {"forward_us"}, {"backward_us"}});
  for (const predict::MeasuredAttention& m : attention)
    t.add_row({number_text(m.batch, 9), number_text(m.heads, 9), number_text(m.seq, 9), number_text(m.head_dim, 9),
               number_text(m.forward_s * 1e6, 5), number_text(m.backward_s * 1e6, 5)});
  t.write_text(std::cout);
}

// Matrix and HBM efficiency curves of --system's GPU fitted to bench_kernels rows of --dtype (the table entries'
// rows), and its measured linears from the --linear rows; with --system-out the system with what the rows gave is
// written (schema-checked before it is written).
void report_kernel_fit(const Options& o, const std::vector<predict::KernelSample>& samples,
                       const std::vector<predict::MeasuredAttention>& attention) {
  predict::SystemModel sys = predict::load_system(o.system);
  if (!attention.empty()) {
    if (!o.common.quiet) print_attention(attention);
    sys = predict::with_measured_attention(sys, attention);
  }
  const bool curves = std::any_of(samples.begin(), samples.end(),
                                  [](const predict::KernelSample& k) { return !k.linear(); });
  if (curves) {
    const predict::KernelFit fit = predict::fit_kernel_curves(samples, sys, o.dtype);
    if (!o.common.quiet) {
      const int bytes = o.dtype == "f32" ? 4 : 2;
      print_curve("matrix efficiency by GFLOP (" + o.dtype + " matmul rows against " +
                      number_text(sys.matrix_tflops(bytes), 6) + " TFLOP/s of " + sys.name + ")",
                  fit.matrix);
      print_curve("HBM efficiency by bytes (" + o.dtype + " elementwise rows against " +
                      number_text(sys.gpu.hbm_gbps, 6) + " GB/s)",
                  fit.hbm);
    }
    sys = predict::with_kernel_fit(sys, fit);
  }
  const std::vector<predict::MeasuredLinear> linears = predict::measured_linears(samples, o.dtype);
  if (!curves && linears.empty() && attention.empty())
    throw UsageError("--calibrate: no kernel row has dtype " + o.dtype + "; accepted: the --dtype of rows in the CSV");
  if (!linears.empty()) {
    if (!o.common.quiet) print_linears(linears, sys.matrix_tflops(linears.front().dtype_bytes));
    sys = predict::with_measured_linears(sys, linears);
  }
  if (o.system_out.empty()) return;
  const nlohmann::json fitted = predict::system_to_json(sys);
  (void)predict::system_from_json(fitted, o.system_out);  // the schema check, before anything is written
  write_file_atomically(o.system_out, fitted.dump(2) + "\n");
  if (!o.common.quiet) std::cout << "# wrote " << o.system_out << "\n";
}

}  // namespace

int calibrate(const Options& o) {
  check_output_paths({{"--csv", o.common.csv}, {"--system-out", o.system_out}});
  std::vector<predict::CollectiveSample> collectives;
  std::vector<predict::KernelSample> kernels;
  std::vector<predict::MeasuredAttention> attention;
  for (const std::string& path : o.calibrate) {
    if (predict::is_sdpa_csv(path)) {
      auto more = predict::read_sdpa_csv(path);
      attention.insert(attention.end(), more.begin(), more.end());
    } else if (predict::is_kernels_csv(path)) {
      auto more = predict::read_kernels_csv(path);
      kernels.insert(kernels.end(), more.begin(), more.end());
    } else {
      auto more = predict::read_collective_csv(path);
      collectives.insert(collectives.end(), more.begin(), more.end());
    }
  }
  if (!o.system_out.empty() && kernels.empty() && attention.empty())
    throw UsageError("--system-out needs a bench_kernels or sdpa_compare.py CSV among --calibrate's files (its "
                     "curves, measured linears and attention are what it writes)");
  if (!collectives.empty()) report_link_fits(o, collectives);
  if (!kernels.empty() || !attention.empty()) report_kernel_fit(o, kernels, attention);
  return 0;
}

}  // namespace parbench::train_bench
