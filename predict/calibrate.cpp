// Fits link alpha and beta to measured collective times.
// Every file that includes fccp must agree on CSV_IO_NO_THREAD (the reader's layout depends on it, and its inline
// functions are shared between the libraries): the schedule and plot readers define it too.
#define CSV_IO_NO_THREAD
#include "predict/calibrate.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>  // fccp's integer parsing uses numeric_limits without including it
#include <map>
#include <optional>
#include <tuple>

// fccp copies the file name with strncpy into a fixed buffer, which g++ flags where that is inlined.
#if !defined(__clang__)  // a g++ warning only (clang builds the fuzz targets)
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#endif
#include <libfccp/csv.h>

#include "collectives/table/collective_table.h"
#include "base/error.h"
#include "base/text.h"
#include "core/csv_columns.h"
#include "core/stats.h"
#include "kernels/op_list.h"

namespace parbench::predict {

bool KernelSample::matmul() const {
  const optable::OpRow* row = optable::find_op_row(op);
  return row && row->cost.matrix();
}
bool KernelSample::linear() const { return optable::linear_part_of(op, nullptr); }

std::vector<CollectiveSample> read_collective_csv(const std::string& path) {
  if (!std::ifstream(path)) throw UsageError("--calibrate: cannot read " + path + "; accepted: a bench_<collective> --csv file");
  std::vector<CollectiveSample> out;
  try {
    io::CSVReader<5, io::trim_chars<' ', '\t'>> in(path);
    namespace col = csv::collective;
    in.read_header(io::ignore_extra_column, col::collective, col::impl, col::ranks, col::bytes, col::time_us);
    CollectiveSample s;
    double time_us = 0;
    while (in.read_row(s.collective, s.impl, s.ranks, s.bytes, time_us)) {
      if (s.ranks < 1 || s.bytes < 0 || !(time_us > 0))
        throw UsageError("--calibrate: " + path + ":" + std::to_string(in.get_file_line()) +
                         ": ranks must be >= 1, bytes >= 0 and time_us > 0");
      try {
        parse_collective(s.collective);
      } catch (const UsageError& e) {
        throw UsageError("--calibrate: " + path + ":" + std::to_string(in.get_file_line()) + ": " + e.what());
      }
      s.seconds = time_us * 1e-6;
      out.push_back(s);
    }
  } catch (const io::error::base& e) {
    throw UsageError("--calibrate: " + path + ": " + e.what() +
                     " (expected a bench_<collective> CSV with columns collective, impl, ranks, bytes, time_us)");
  }
  if (out.empty()) throw UsageError("--calibrate: " + path + " has no rows");
  return out;
}

namespace {

// The message steps and the fraction of the buffer each link carries, by the collective's wire family (the
// collective table): a ring's, a tree's or one message's.
std::pair<double, double> steps_and_volume(const std::string& collective, int n) {
  if (n <= 1) return {0, 0};
  const Collective c = parse_collective(collective);
  return {wire_steps(c, n), wire_fraction(c, n)};
}

LinkFit fit_group(const std::vector<const CollectiveSample*>& rows) {
  LinkFit f;
  f.collective = rows[0]->collective, f.impl = rows[0]->impl, f.ranks = rows[0]->ranks, f.samples = int(rows.size());
  const auto [steps, volume] = steps_and_volume(f.collective, f.ranks);
  // time = a + b x with x = volume * bytes, least squares of the relative error (weights 1 / time^2), so that
  // microsecond rows count as much as second rows; then a, b >= 0.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto* r : rows) {
    const double x = volume * r->bytes, y = r->seconds, w = 1 / (y * y);
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double den = sw * sxx - sx * sx;
  double b = den > 0 ? (sw * sxy - sx * sy) / den : 0, a = (sy - b * sx) / sw;
  if (a < 0) a = 0, b = sxx > 0 ? sxy / sxx : 0;
  if (b < 0) b = 0, a = sy / sw;
  const double n = double(rows.size());
  f.alpha = steps > 0 ? a / steps : a;
  f.beta = b;
  for (const auto* r : rows) {
    const double model = a + b * volume * r->bytes, err = std::abs(model - r->seconds) / r->seconds;
    f.mean_rel_error += err / n;
    f.max_rel_error = std::max(f.max_rel_error, err);
  }
  return f;
}

}  // namespace

std::vector<LinkFit> fit_links(const std::vector<CollectiveSample>& samples) {
  std::map<std::tuple<std::string, std::string, int>, std::vector<const CollectiveSample*>> groups;
  for (const auto& s : samples)
    if (s.ranks > 1) groups[{s.collective, s.impl, s.ranks}].push_back(&s);
  std::vector<LinkFit> out;
  for (const auto& [key, rows] : groups) {
    std::map<double, int> sizes;
    for (const auto* r : rows) ++sizes[r->bytes];
    if (sizes.size() >= 2) out.push_back(fit_group(rows));
  }
  if (out.empty())
    throw UsageError("--calibrate: no (collective, impl, ranks) group with more than one rank and at least two sizes");
  return out;
}

bool is_kernels_csv(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  return std::getline(in, header) && header.rfind(std::string(csv::kernels::name) + ",", 0) == 0;
}

namespace {

// "matmul_forward_qkv/reference/cpu/f32/small" -> op matmul_forward_qkv, impl reference, dtype f32, shape small:
// the dtype is the part after the device; the parts between the op and the device are the implementation.
void parse_name(const std::string& name, KernelSample& k) {
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const std::size_t slash = name.find('/', at);
    parts.push_back(name.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  k.op = parts[0];
  for (std::size_t i = 2; i < parts.size(); ++i)
    if (parts[i] == "f32" || parts[i] == "bf16" || parts[i] == "f16") {
      k.dtype = parts[i];
      if (i + 1 < parts.size()) k.shape = parts[i + 1];
      for (std::size_t j = 1; j + 1 < i; ++j) k.impl += (k.impl.empty() ? "" : "/") + parts[j];
      return;
    }
}

double seconds_per_unit(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  return 0;
}

}  // namespace

std::vector<KernelSample> read_kernels_csv(const std::string& path) {
  const std::string form = "accepted: bench_kernels --csv or --benchmark_format=csv output";
  if (!std::ifstream(path)) throw UsageError("--calibrate: cannot read " + path + "; " + form);
  std::vector<KernelSample> out;
  try {
    io::CSVReader<8, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>> in(path);
    namespace col = csv::kernels;
    in.read_header(io::ignore_extra_column | io::ignore_missing_column, col::name, col::real_time, col::time_unit,
                   col::error_occurred, col::counter_flops, col::counter_bytes, col::flops_per_s, col::bytes_per_s);
    // The rates are Google Benchmark's counters in its CSV, flops_per_s and bytes_per_s in bench_kernels --csv.
    const bool counters = in.has_column(col::counter_flops);
    const char* flops = counters ? col::counter_flops : col::flops_per_s;
    const char* bytes = counters ? col::counter_bytes : col::bytes_per_s;
    for (const char* column : {col::name, col::real_time, col::time_unit, flops, bytes})
      if (!in.has_column(column))
        throw UsageError("--calibrate: " + path + " has no column '" + column + "'; " + form);
    // Rates as text: a failed benchmark leaves them empty.
    std::string name, unit, error, flop_counter, byte_counter, flop_column, byte_column;
    double time = 0;
    while (in.read_row(name, time, unit, error, flop_counter, byte_counter, flop_column, byte_column)) {
      const double flop_rate = std::strtod((counters ? flop_counter : flop_column).c_str(), nullptr);
      const double byte_rate = std::strtod((counters ? byte_counter : byte_column).c_str(), nullptr);
      if (error == "true" || error == "1" || !(flop_rate > 0) || !(byte_rate > 0)) continue;
      const double per_unit = seconds_per_unit(unit);
      if (per_unit == 0 || !(time > 0))
        throw UsageError("--calibrate: " + path + ":" + std::to_string(in.get_file_line()) + ": time " +
                         std::to_string(time) + " " + unit + " is not a time; accepted: > 0 in ns, us, ms or s");
      KernelSample k;
      parse_name(name, k);
      k.seconds = time * per_unit, k.flops = flop_rate * k.seconds, k.bytes = byte_rate * k.seconds;
      out.push_back(k);
    }
  } catch (const io::error::base& e) {
    throw UsageError("--calibrate: " + path + ": " + e.what() + "; " + form);
  }
  if (out.empty()) throw UsageError("--calibrate: " + path + " has no kernel rows with FLOP/s and bytes/s");
  return out;
}

CurveFit fit_curve(const std::vector<std::pair<double, double>>& size_and_efficiency) {
  std::map<int, std::vector<double>> by_decade;  // floor(log10(size)) -> efficiencies
  for (const auto& [size, eff] : size_and_efficiency)
    if (size > 0 && eff > 0) by_decade[int(std::floor(std::log10(size)))].push_back(eff);
  CurveFit f;
  for (auto it = by_decade.rbegin(); it != by_decade.rend(); ++it) {
    const bool smallest = std::next(it) == by_decade.rend();
    f.curve.points.push_back({smallest ? 0.0 : std::pow(10.0, it->first), std::min(1.0, median(it->second))});
  }
  for (const auto& [size, eff] : size_and_efficiency) {
    if (!(size > 0 && eff > 0)) continue;
    const double err = std::abs(f.curve.at(size) - eff) / eff;
    f.mean_rel_error += err, f.max_rel_error = std::max(f.max_rel_error, err), ++f.samples;
  }
  if (f.samples) f.mean_rel_error /= f.samples;
  return f;
}

KernelFit fit_kernel_curves(const std::vector<KernelSample>& samples, const SystemModel& sys, const std::string& dtype) {
  const double peak = sys.matrix_tflops(dtype == "f32" ? 4 : 2) * 1e12, hbm = sys.gpu.hbm_gbps * 1e9;
  // On cuda the matrix curve is cuBLAS's (what a framework's GEMMs run at), not that of our slowest versions.
  const bool vendor = std::any_of(samples.begin(), samples.end(), [&](const KernelSample& k) {
    return k.matmul() && k.dtype == dtype && k.impl == "cublas";
  });
  std::vector<std::pair<double, double>> matrix, memory;
  for (const KernelSample& k : samples) {
    if (k.dtype != dtype || k.linear()) continue;  // a --linear's rows are measured linears, not curve points
    if (k.matmul() && vendor && k.impl != "cublas") continue;
    if (k.matmul()) matrix.push_back({k.flops / 1e9, k.flops / k.seconds / peak});
    else memory.push_back({k.bytes, k.bytes / k.seconds / hbm});
  }
  if (matrix.empty() && memory.empty())
    throw UsageError("--calibrate: no kernel row has dtype " + dtype + "; accepted: the --dtype of rows in the CSV");
  KernelFit fit;
  fit.matrix = matrix.empty() ? CurveFit{sys.gpu.matrix_efficiency} : fit_curve(matrix);
  fit.hbm = memory.empty() ? CurveFit{sys.gpu.hbm_efficiency} : fit_curve(memory);
  return fit;
}

SystemModel with_kernel_fit(SystemModel sys, const KernelFit& fit) {
  sys.gpu.matrix_efficiency = fit.matrix.curve, sys.gpu.hbm_efficiency = fit.hbm.curve;
  sys.gpu.processing = Processing::roofline;
  sys.source += "; matrix and HBM efficiency fitted by bench_train --calibrate to bench_kernels rows";
  return sys;
}

namespace {

// "T2048_I12288_O9216" -> {2048, 12288, 9216}; nothing when the name is not of that form or a number is out of the
// system file's bounds (tokens up to 1e12, widths up to 1e9).
std::optional<MeasuredLinear> linear_of_shape(const std::string& shape) {
  const char* at = shape.data();
  const char* const end = shape.data() + shape.size();
  double dims[3] = {0, 0, 0};
  const char* tags[3] = {"T", "_I", "_O"};
  const double bounds[3] = {1e12, 1e9, 1e9};
  for (int i = 0; i < 3; ++i) {
    const std::size_t tag = std::strlen(tags[i]);
    if (std::size_t(end - at) <= tag || std::strncmp(at, tags[i], tag) != 0) return std::nullopt;
    at += tag;
    long long v = 0;
    const auto [next, ec] = std::from_chars(at, end, v);
    if (ec != std::errc() || v < 1 || double(v) > bounds[i]) return std::nullopt;
    dims[i] = double(v), at = next;
  }
  if (at != end) return std::nullopt;
  MeasuredLinear m;
  m.tokens = dims[0], m.in = dims[1], m.out = dims[2];
  return m;
}

// Which part of a linear an op's row times: its forward, input gradient or weight gradient; null for another op.
double MeasuredLinear::*part_of(const std::string& op) {
  optable::LinearPart part{};
  if (!optable::linear_part_of(op, &part)) return nullptr;
  switch (part) {
    case optable::LinearPart::forward: return &MeasuredLinear::forward_s;
    case optable::LinearPart::input_gradient: return &MeasuredLinear::input_gradient_s;
    case optable::LinearPart::weight_gradient: return &MeasuredLinear::weight_gradient_s;
    case optable::LinearPart::backward: return nullptr;
  }
  return nullptr;
}

// The op table's attention pair measured against SDPA: the forward of cost role measured_attention and its backward.
std::pair<std::string, std::string> measured_attention_ops() {
  const std::vector<std::string_view> rows = optable::op_names_with(optable::CostRole::measured_attention);
  if (rows.size() != 1) throw Error("the op table has " + std::to_string(rows.size()) + " measured_attention rows");
  return {std::string(rows[0]), std::string(optable::find_op_row(rows[0])->pair.backward)};
}

// `held` with each of `added` in it, replacing an entry of the same shape and element size.
template <class T>
void replace_measured(std::vector<T>& held, const std::vector<T>& added) {
  for (const T& m : added) {
    std::erase_if(held, [&](const T& o) { return o.same_shape(m); });
    held.push_back(m);
  }
}

}  // namespace

std::vector<MeasuredLinear> measured_linears(const std::vector<KernelSample>& samples, const std::string& dtype) {
  const bool vendor = std::any_of(samples.begin(), samples.end(), [&](const KernelSample& k) {
    return k.linear() && k.dtype == dtype && k.impl == "cublas";
  });
  std::vector<std::string> order;
  std::map<std::string, MeasuredLinear> by_shape;
  for (const KernelSample& k : samples) {
    if (!k.linear() || k.dtype != dtype) continue;
    const auto part = part_of(k.op);
    if (!part || k.impl != (vendor ? "cublas" : part == &MeasuredLinear::forward_s ? "reference" : "")) continue;
    const std::optional<MeasuredLinear> shape = linear_of_shape(k.shape);
    if (!shape) throw UsageError("--calibrate: linear row shape '" + k.shape + "' is not T<tokens>_I<in>_O<out> as "
                                 "bench_kernels names it (widths up to 1e9), e.g. T2048_I12288_O9216");
    if (!(k.seconds >= 1e-12))  // the system file's bound: 1e-6 us
      throw UsageError("--calibrate: linear " + k.shape + "'s " + k.op + " time " + std::to_string(k.seconds) +
                       " s is below a picosecond; accepted: a measured time");
    if (!by_shape.count(k.shape)) {
      order.push_back(k.shape), by_shape[k.shape] = *shape;
      by_shape[k.shape].dtype_bytes = dtype == "f32" ? 4 : 2;
    }
    by_shape[k.shape].*part = k.seconds;
  }
  std::vector<MeasuredLinear> out;
  for (const std::string& shape : order) {
    const MeasuredLinear& m = by_shape[shape];  // a part never timed is still 0
    if (m.forward_s == 0 || m.input_gradient_s == 0 || m.weight_gradient_s == 0)
      throw UsageError("--calibrate: linear " + shape + " (" + dtype + ") lacks its " +
                       (vendor ? "cuBLAS " : "") + "forward, input or weight gradient row");
    out.push_back(m);
  }
  return out;
}

SystemModel with_measured_linears(SystemModel sys, const std::vector<MeasuredLinear>& linears) {
  replace_measured(sys.gpu.measured_linears, linears);
  sys.source += "; " + std::to_string(linears.size()) + " linear layers measured by bench_kernels --linear";
  return sys;
}

bool is_sdpa_csv(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  return std::getline(in, header) && header.rfind("B,T,NH,hs,op,", 0) == 0;
}

std::vector<MeasuredAttention> read_sdpa_csv(const std::string& path) {
  const std::string form = "accepted: scripts/sdpa_compare.py --out output (B,T,NH,hs,op,ours_us,sdpa_us,...)";
  if (!std::ifstream(path)) throw UsageError("--calibrate: cannot read " + path + "; " + form);
  std::vector<std::array<double, 4>> order;
  std::map<std::array<double, 4>, MeasuredAttention> by_shape;
  const auto [forward_op, backward_op] = measured_attention_ops();
  try {
    io::CSVReader<6, io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>> in(path);
    in.read_header(io::ignore_extra_column, "B", "T", "NH", "hs", "op", "sdpa_us");
    double b = 0, t = 0, nh = 0, hs = 0, us = 0;
    std::string op;
    while (in.read_row(b, t, nh, hs, op, us)) {
      const std::string where = path + ":" + std::to_string(in.get_file_line());
      if (op != forward_op && op != backward_op) continue;
      for (double v : {b, t, nh, hs})
        if (!(v >= 1 && v <= 1e9 && v == std::floor(v)))
          throw UsageError("--calibrate: " + where + ": B, T, NH and hs must be whole numbers from 1 to 1e9");
      if (!(us >= 1e-6 && us <= 1e12)) throw UsageError("--calibrate: " + where + ": sdpa_us must be a time in us");
      const std::array<double, 4> key{b, t, nh, hs};
      if (!by_shape.count(key)) order.push_back(key), by_shape[key] = MeasuredAttention{b, nh, t, hs, 2, 0, 0};
      (op == forward_op ? by_shape[key].forward_s : by_shape[key].backward_s) = us * 1e-6;
    }
  } catch (const io::error::base& e) {
    throw UsageError("--calibrate: " + path + ": " + e.what() + "; " + form);
  }
  std::vector<MeasuredAttention> out;
  for (const auto& key : order) {
    const MeasuredAttention& m = by_shape[key];
    if (m.forward_s == 0 || m.backward_s == 0)
      throw UsageError("--calibrate: " + path + ": attention B " + number_text(key[0]) + " T " +
                       number_text(key[1]) + " NH " + number_text(key[2]) + " hs " + number_text(key[3]) +
                       " lacks its forward or backward row");
    out.push_back(m);
  }
  if (out.empty()) throw UsageError("--calibrate: " + path + " has no flash attention rows; " + form);
  return out;
}

SystemModel with_measured_attention(SystemModel sys, const std::vector<MeasuredAttention>& attention) {
  replace_measured(sys.gpu.measured_attention, attention);
  sys.source += "; " + std::to_string(attention.size()) + " attention shapes measured by scripts/sdpa_compare.py";
  return sys;
}

}  // namespace parbench::predict
