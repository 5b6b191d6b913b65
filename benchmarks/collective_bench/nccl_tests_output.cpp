// See report.h. The text side: column widths are nccl-tests' (size 12, count 12, type 8, redop 6, root 6, then
// per half time 7, algbw 6, busbw 6, #wrong 6 and with -I four columns of 7), each column after the first
// preceded by two blanks, -S's time of day last in 21 characters.
#include "nccl_tests_output.h"

#include <cstdio>
#include <ctime>

#include "app/sizes.h"

namespace parbench {
namespace {

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// "true"/"false" as nccl-tests writes its booleans in the JSON.
const char* bool_text(bool b) { return b ? "true" : "false"; }

}  // namespace

std::string float_str(double value, int width) {
  int power = 0;  // digits of the integer part (0 below 1)
  double bound = 1;
  for (; value >= bound && power < 40; bound *= 10) ++power;
  if (power < width - 2) return format("%*.2f", width, value);
  if (power < width - 1) return format("%*.1f", width, value);
  if (power < width + 1) return format("%*.0f", width, value);
  if (width >= 7) return format("%*.1e", width, value);
  return format("%*.0e", width, value);
}

std::string time_of_day() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

NcclReport::NcclReport(std::string program, const BenchOptions& o, std::uint64_t min_bytes, std::uint64_t max_bytes,
                       std::vector<std::string> argv)
    : program_(std::move(program)), o_(o), min_bytes_(min_bytes), max_bytes_(max_bytes), argv_(std::move(argv)),
      start_time_(time_of_day()) {}

void NcclReport::print_header(const std::vector<RankInfo>& ranks, const std::vector<std::string>& notes) const {
  std::printf("# parbench %s (nccl-tests layout, JSON version 2) nccl-headers=none nccl-library=none\n",
              program_.c_str());
  std::printf("# Collective test starting: %s\n", program_.c_str());
  std::string step;
  if (o_.sizes.empty() && o_.stepfactor > 1) step = format("%llu(factor)", (unsigned long long)o_.stepfactor);
  else if (o_.sizes.empty()) step = format("%llu(bytes)", (unsigned long long)parse_size(o_.stepbytes));
  else step = o_.sizes + "(list)";
  std::printf("# nThread %d nGpus %d minBytes %llu maxBytes %llu step: %s warmup iters: %d iters: %d agg iters: %d "
              "validation: %d graph: %d unalign: %d\n",
              o_.nthreads, o_.ngpus, (unsigned long long)min_bytes_, (unsigned long long)max_bytes_, step.c_str(),
              o_.warmup, o_.iters, o_.agg, o_.check, o_.graph, o_.unalign);
  if (o_.blocking == 1) std::printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
  if (o_.blocking > 1) std::printf("# Blocking Enabled: wait for completion after each collective (no barrier) \n");
  if (o_.per_iter) std::printf("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows \n");
  std::printf("#\n# Using devices\n");
  for (const RankInfo& r : ranks)
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", r.rank, r.group, r.pid,
                r.host.c_str(), r.device, r.bus.c_str(), r.name.c_str());
  std::printf("#\n");
  for (const std::string& n : notes) std::printf("# %s\n", n.c_str());
  std::fflush(stdout);
}

void NcclReport::print_table_header() const {
  const char* time = o_.cputime ? "cputime" : "time";
  const int ts_pad = o_.timestamps ? 19 : 0;
  const char* ts_name = o_.timestamps ? "timestamp" : "";
  const char* ts_unit = o_.timestamps ? "%Y-%m-%d %H:%M:%S" : "";
  std::string lead = format("# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
  std::string names = format("# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  std::string units = format("# %10s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  if (o_.per_iter)
    lead += "              out-of-place (+ per-iteration)                                in-place (+ per-iteration)";
  else
    lead += "           out-of-place                       in-place          ";
  for (int half = 0; half < 2; ++half) {
    names += format("  %7s  %6s  %6s  %6s", time, "algbw", "busbw", "#wrong");
    units += format("  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
    if (!o_.per_iter) continue;
    names += format("  %7s  %7s  %7s  %7s", "i_min", "i_max", "i_p99", "i_cv%");
    units += format("  %7s  %7s  %7s  %7s", "(us)", "(us)", "(us)", "(%)");
  }
  names += format(" %*s", ts_pad, ts_name);
  units += format(" %*s", ts_pad, ts_unit);
  std::printf("#\n%s\n%s\n%s\n", lead.c_str(), names.c_str(), units.c_str());
}

std::string NcclReport::half_columns(const HalfResult& h) const {
  if (!h.ran) {  // --inplace only/off: the half keeps its fields, each "-"
    std::string s = format("  %7s  %6s  %6s  %6s", "-", "-", "-", "-");
    if (o_.per_iter) s += format("  %7s  %7s  %7s  %7s", "-", "-", "-", "-");
    return s;
  }
  const double t = (o_.cputime ? h.t.cpu_time : h.t.time) * 1e6;
  std::string s = format("  %7s  %6s  %6s", float_str(t, 7).c_str(), float_str(h.algbw, 6).c_str(),
                         float_str(h.busbw, 6).c_str());
  s += h.wrong < 0 ? std::string("    N/A") : format("  %6g", double(h.wrong));  // nccl-tests' N/A is 7 wide
  if (o_.per_iter) {
    const IterStats& st = h.per_iter.stats;
    s += format("  %7s  %7s  %7s  %7s", float_str(st.min * 1e6, 7).c_str(), float_str(st.max * 1e6, 7).c_str(),
                float_str(st.p99 * 1e6, 7).c_str(), float_str(st.cv_pct, 7).c_str());
  }
  return s;
}

void NcclReport::print_row(const RowResult& r) const {
  const std::string root = format("%6i", r.root);
  std::string line = format("%12llu  %12llu  %8s  %6s  %6s", (unsigned long long)r.bytes,
                            (unsigned long long)r.count, nccl_type_name(r.dtype), r.redop.c_str(), root.c_str());
  for (const HalfResult& h : r.half) line += half_columns(h);
  if (o_.timestamps) line += format("%21s", r.timestamp.c_str());
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void NcclReport::print_block_footer(std::int64_t wrong, double avg_busbw) const {
  std::printf("# %-20s : %lld %s\n", "Out of bounds values", (long long)wrong, wrong ? "FAILED" : "OK");
  std::printf("# %-20s : %g %s\n#\n", "Avg bus bandwidth", avg_busbw, "");
  std::fflush(stdout);
}

void NcclReport::print_end() const {
  std::printf("# Collective test concluded: %s\n#\n", program_.c_str());
  std::fflush(stdout);
}

std::string NcclReport::json_head(const std::vector<RankInfo>& ranks) const {
  nlohmann::ordered_json j;
  j["version"] = 2;  // nccl-tests' JSON_FILE_VERSION
  j["start_time"] = start_time_;
  j["args"] = argv_;
  j["env"] = json_environment();
  j["nccl_version"] = 0;  // no NCCL library version applies to every implementation; experiment_name says which
  nlohmann::ordered_json cfg;
  cfg["nthreads"] = o_.nthreads, cfg["ngpus"] = o_.ngpus;
  cfg["minimum_bytes"] = min_bytes_, cfg["maximum_bytes"] = max_bytes_;
  if (o_.stepfactor > 1) cfg["step_factor"] = o_.stepfactor;
  else cfg["step_bytes"] = o_.sizes.empty() ? parse_size(o_.stepbytes) : 0;
  cfg["warmup_iters"] = o_.warmup, cfg["iterations"] = o_.iters, cfg["aggregated_iterations"] = o_.agg;
  cfg["validation"] = o_.check, cfg["graph"] = o_.graph;
  cfg["blocking_collectives"] = bool_text(o_.blocking != 0);
  cfg["per_iter_timing"] = bool_text(o_.per_iter != 0);
  cfg["parallel_init"] = bool_text(o_.parallel_init != 0);
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const RankInfo& r : ranks)
    devices.push_back({{"rank", r.rank}, {"group", r.group}, {"pid", r.pid}, {"hostname", r.host},
                       {"device", r.device}, {"device_hex", r.bus}, {"device_info", r.name}});
  cfg["devices"] = devices;
  j["config"] = cfg;
  std::string text = j.dump();
  text.pop_back();  // the object's '}': the results list follows
  return text + ",\"results\":[";
}

void NcclReport::json_row(const std::string& path, const RowResult& r, const std::string& impl,
                          const std::vector<RankInfo>& ranks, std::int64_t wrong, double avg_busbw) {
  if (!json_.is_open()) json_.open(path, json_head(ranks), json_tail(0, 0, ""));
  const std::int64_t actual = std::int64_t(o_.iters) * o_.agg;
  json_.append(result_json(r, impl, o_.cputime != 0, o_.per_iter != 0, actual).dump(),
               json_tail(wrong, avg_busbw, ""));
}

void NcclReport::json_finish(std::int64_t wrong, double avg_busbw) {
  if (json_.is_open()) json_.set_tail(json_tail(wrong, avg_busbw, time_of_day()));
}

}  // namespace parbench
