// Fits link alpha and beta to measured collective times.
// Every file that includes fccp must agree on CSV_IO_NO_THREAD (the reader's layout depends on it, and its inline
// functions are shared between the libraries): the schedule and plot readers define it too.
#define CSV_IO_NO_THREAD
#include "predict/calibrate.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>  // fccp's integer parsing uses numeric_limits without including it
#include <map>
#include <tuple>

// fccp copies the file name with strncpy into a fixed buffer, which g++ flags where that is inlined.
#pragma GCC diagnostic ignored "-Wstringop-truncation"
#include <libfccp/csv.h>

#include "core/error.h"

namespace parbench::predict {

std::vector<CollectiveSample> read_collective_csv(const std::string& path) {
  if (!std::ifstream(path)) throw UsageError("--calibrate: cannot read " + path + "; accepted: a bench_<collective> --csv file");
  std::vector<CollectiveSample> out;
  try {
    io::CSVReader<5, io::trim_chars<' ', '\t'>> in(path);
    in.read_header(io::ignore_extra_column, "collective", "impl", "ranks", "bytes", "time_us");
    CollectiveSample s;
    double time_us = 0;
    while (in.read_row(s.collective, s.impl, s.ranks, s.bytes, time_us)) {
      if (s.ranks < 1 || s.bytes < 0 || !(time_us > 0))
        throw UsageError("--calibrate: " + path + ":" + std::to_string(in.get_file_line()) +
                         ": ranks must be >= 1, bytes >= 0 and time_us > 0");
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

// The ring's message steps and the fraction of the buffer each link carries.
std::pair<double, double> steps_and_volume(const std::string& collective, int n) {
  if (n <= 1) return {0, 0};
  if (collective == "allreduce") return {2.0 * (n - 1), 2.0 * (n - 1) / n};
  if (collective == "allgather" || collective == "reducescatter" || collective == "alltoall")
    return {double(n - 1), double(n - 1) / n};
  if (collective == "broadcast" || collective == "reduce") return {std::ceil(std::log2(double(n))), 1.0};
  return {1.0, 1.0};
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

}  // namespace parbench::predict
