// See report.h. Column widths are nccl-tests': size 12, count 12, type 8, redop 6, root 6, then per half time 7,
// algbw 6, busbw 6, #wrong 6, each column after the first preceded by two blanks.
#include "report.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include "app/report.h"
#include "core/sizes.h"

namespace parbench {
namespace {

// nccl-tests' names for the types in the table and the JSON.
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

// A non-negative number in `width` characters with as many decimals as fit (two at most), as nccl-tests does.
std::string fit(double v, int width) {
  char buf[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    std::snprintf(buf, sizeof buf, "%*.*f", width, decimals, v);
    if (int(std::string(buf).size()) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, "%*.0e", width, v);
  return buf;
}

std::string wrong_text(std::int64_t w) { return w < 0 ? "N/A" : std::to_string(w); }

std::string iso_time(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

nlohmann::json half_json(const HalfResult& h, bool cputime) {
  nlohmann::json j;
  j[cputime ? "cpu_time" : "time"] = (cputime ? h.t.cpu_time : h.t.time) * 1e6;
  j["alg_bw"] = h.algbw;
  j["bus_bw"] = h.busbw;
  j["nwrong"] = h.wrong < 0 ? nlohmann::json() : nlohmann::json(h.wrong);
  return j;
}

}  // namespace

std::string time_of_day() { return iso_time("%Y-%m-%dT%H:%M:%S"); }

NcclReport::NcclReport(std::string program, const BenchOptions& o, std::uint64_t min_bytes, std::uint64_t max_bytes,
                       std::vector<std::string> argv)
    : program_(std::move(program)), o_(o), min_bytes_(min_bytes), max_bytes_(max_bytes), argv_(std::move(argv)),
      start_time_(iso_time("%F %T")) {}

void NcclReport::print_header(const std::vector<RankInfo>& ranks, const std::vector<std::string>& notes) const {
  std::printf("# parbench %s (nccl-tests layout, JSON version 3) nccl-headers=none nccl-library=none\n",
              program_.c_str());
  std::printf("# Collective test starting: %s\n", program_.c_str());
  char step[64];
  if (o_.sizes.empty() && o_.stepfactor > 1) std::snprintf(step, sizeof step, "%llu(factor)",
                                                             (unsigned long long)o_.stepfactor);
  else if (o_.sizes.empty()) std::snprintf(step, sizeof step, "%llu(bytes)",
                                            (unsigned long long)parse_size(o_.stepbytes));
  else std::snprintf(step, sizeof step, "%s(list)", o_.sizes.c_str());
  std::printf("# nThread %d nGpus %d minBytes %llu maxBytes %llu step: %s warmup iters: %d iters: %d agg iters: %d "
              "validation: %d graph: %d unalign: %d\n",
              o_.nthreads, o_.ngpus, (unsigned long long)min_bytes_, (unsigned long long)max_bytes_, step, o_.warmup, o_.iters, o_.agg,
              o_.check, o_.graph, o_.unalign);
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
  const std::string ts = o_.timestamps ? std::string(19, ' ') + "  " : "";
  const std::string title = "#" + ts + std::string(51, ' ') + "           out-of-place" +
                            std::string(o_.per_iter ? 23 + 32 : 23, ' ') + "in-place          ";
  std::string names = "#", units = "#";
  if (o_.timestamps) names += "          timestamp  ", units += std::string(21, ' ');
  char buf[256];
  std::snprintf(buf, sizeof buf, "%11s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
  names += buf;
  std::snprintf(buf, sizeof buf, "%11s  %12s  %8s  %6s  %6s", "(B)", "(elements)", "", "", "");
  units += buf;
  for (int half = 0; half < 2; ++half) {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", time, "algbw", "busbw", "#wrong");
    names += buf;
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
    units += buf;
    if (o_.per_iter) {
      std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %6s", "min", "max", "p99", "cv");
      names += buf;
      std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %6s", "(us)", "(us)", "(us)", "");
      units += buf;
    }
  }
  std::printf("#\n%s\n%s\n%s\n", title.c_str(), names.c_str(), units.c_str());
}

std::string NcclReport::half_columns(const HalfResult& h) const {
  char buf[160];
  if (!h.ran) {
    std::snprintf(buf, sizeof buf, "  %7s  %6s  %6s  %6s", "-", "-", "-", "-");
    std::string s = buf;
    if (o_.per_iter) std::snprintf(buf, sizeof buf, "  %7s  %7s  %7s  %6s", "-", "-", "-", "-"), s += buf;
    return s;
  }
  const double t = (o_.cputime ? h.t.cpu_time : h.t.time) * 1e6;
  std::snprintf(buf, sizeof buf, "  %s  %s  %s  %6s", fit(t, 7).c_str(), fit(h.algbw, 6).c_str(),
                fit(h.busbw, 6).c_str(), wrong_text(h.wrong).c_str());
  std::string s = buf;
  if (o_.per_iter) {
    std::snprintf(buf, sizeof buf, "  %s  %s  %s  %6.3f", fit(h.t.min * 1e6, 7).c_str(), fit(h.t.max * 1e6, 7).c_str(),
                  fit(h.t.p99 * 1e6, 7).c_str(), h.t.cv);
    s += buf;
  }
  return s;
}

void NcclReport::print_row(const RowResult& r) const {
  std::string line = o_.timestamps ? r.timestamp + "  " : "";
  char buf[128];
  std::snprintf(buf, sizeof buf, "%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)r.bytes,
                (unsigned long long)r.count, nccl_type_name(r.dtype), r.redop.c_str(), r.root);
  line += buf;
  for (const HalfResult& h : r.half) line += half_columns(h);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void NcclReport::print_block_footer(std::int64_t wrong, double avg_busbw) const {
  std::printf("# Out of bounds values : %lld %s\n", (long long)wrong, wrong ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n#\n", avg_busbw);
  std::fflush(stdout);
}

void NcclReport::print_end() const {
  std::printf("# Collective test concluded: %s\n#\n", program_.c_str());
  std::fflush(stdout);
}

void NcclReport::add_json_row(const RowResult& r, const std::string& impl) {
  nlohmann::json j;
  j["size"] = r.bytes;
  j["count"] = r.count;
  j["type"] = nccl_type_name(r.dtype);
  j["redop"] = r.redop;
  j["root"] = r.root;
  j["out_of_place"] = r.half[0].ran ? half_json(r.half[0], o_.cputime) : nlohmann::json();
  j["in_place"] = r.half[1].ran ? half_json(r.half[1], o_.cputime) : nlohmann::json();
  j["actual_iterations"] = std::int64_t(o_.iters) * o_.agg;
  j["experiment_name"] = impl;
  results_.push_back(std::move(j));
}

void NcclReport::write_json(const std::string& path, const std::vector<RankInfo>& ranks, std::int64_t wrong,
                            double avg_busbw) const {
  nlohmann::json j;
  j["version"] = 3;
  j["start_time"] = start_time_;
  j["args"] = argv_;
  nlohmann::json env = nlohmann::json::array();
  for (const char* name : {"NCCL_TESTS_SPLIT", "PARBENCH_NCCL", "CUDA_VISIBLE_DEVICES"})
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  j["env"] = env;
  j["nccl_version"] = nullptr;  // our implementations are not all NCCL; experiment_name says which ran
  nlohmann::json cfg;
  cfg["nthreads"] = o_.nthreads, cfg["ngpus"] = o_.ngpus;
  cfg["minimum_bytes"] = min_bytes_, cfg["maximum_bytes"] = max_bytes_;
  if (o_.stepfactor > 1) cfg["step_factor"] = o_.stepfactor;
  else cfg["step_bytes"] = parse_size(o_.stepbytes);
  cfg["warmup_iters"] = o_.warmup, cfg["iterations"] = o_.iters, cfg["aggregated_iterations"] = o_.agg;
  cfg["validation"] = o_.check, cfg["graph"] = o_.graph, cfg["blocking_collectives"] = o_.blocking;
  cfg["per_iter_timing"] = o_.per_iter, cfg["per_iter_skip"] = o_.per_iter_skip;
  cfg["parallel_init"] = o_.parallel_init;
  j["config"] = cfg;
  nlohmann::json devices = nlohmann::json::array();
  for (const RankInfo& r : ranks)
    devices.push_back({{"rank", r.rank}, {"group", r.group}, {"pid", r.pid}, {"hostname", r.host},
                       {"device", r.device}, {"device_hex", r.bus}, {"device_info", r.name}});
  j["devices"] = devices;
  j["results"] = results_;
  j["out_of_bounds"] = {{"count", wrong}, {"okay", wrong == 0}};
  j["average_bus_bandwidth"] = {{"bandwidth", avg_busbw}, {"okay", true}};
  j["end_time"] = iso_time("%F %T");
  write_file_atomically(path, j.dump(2) + "\n");
}

}  // namespace parbench
