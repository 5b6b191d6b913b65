// See report.h: the JSON side of the report (-J), in nccl-tests' key order and value types: booleans as the
// strings "true"/"false", root as its "%6i" text, #wrong as a number with decimals (null unchecked), and with -I
// an "<half>_per_iter" object after each half (and with --outliers a "<half>_per_rank" one).
#include "nccl_tests_output.h"
#include "outliers.h"

#include <cstdio>
#include <cstring>

extern char** environ;

namespace parbench {
namespace {

nlohmann::ordered_json half_json(const HalfResult& h, bool cputime) {
  nlohmann::ordered_json j;
  j[cputime ? "cpu_time" : "time"] = (cputime ? h.t.cpu_time : h.t.time) * 1e6;
  j["alg_bw"] = h.algbw;
  j["bus_bw"] = h.busbw;
  j["nwrong"] = h.wrong < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(double(h.wrong));
  return j;
}

nlohmann::ordered_json micros(const std::vector<double>& seconds) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (double s : seconds) list.push_back(s * 1e6);
  return list;
}

nlohmann::ordered_json per_iter_json(const PerIterResult& p) {
  nlohmann::ordered_json j;
  j["skipped_iterations"] = p.skipped;
  j["min_us"] = p.stats.min * 1e6;
  j["max_us"] = p.stats.max * 1e6;
  j["avg_us"] = p.stats.avg * 1e6;
  j["p50_us"] = p.stats.p50 * 1e6;
  j["p95_us"] = p.stats.p95 * 1e6;
  j["p99_us"] = p.stats.p99 * 1e6;
  j["stdev_us"] = p.stats.stdev * 1e6;
  j["cv_pct"] = p.stats.cv_pct;
  j["times_us"] = micros(p.times);
  if (!p.per_process.empty()) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& row : p.per_process) all.push_back(micros(row));
    j["per_process_max_times_us"] = all;
  }
  return j;
}

}  // namespace

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

nlohmann::ordered_json json_environment() {
  nlohmann::ordered_json env = nlohmann::ordered_json::array();
  for (char** e = environ; e && *e; ++e)
    for (const char* prefix : {"NCCL_", "CUDA_", "PARBENCH_"})
      if (std::strncmp(*e, prefix, std::strlen(prefix)) == 0) env.push_back(std::string(*e));
  return env;
}

nlohmann::ordered_json result_json(const RowResult& r, const std::string& impl, bool cputime, bool per_iter,
                                   std::int64_t actual_iterations) {
  char root[32];
  std::snprintf(root, sizeof root, "%6i", r.root);
  nlohmann::ordered_json j;
  j["size"] = r.bytes;
  j["count"] = r.count;
  j["type"] = nccl_type_name(r.dtype);
  j["redop"] = r.redop;
  j["root"] = root;
  const char* names[2] = {"out_of_place", "in_place"};
  for (int i = 0; i < 2; ++i) {
    const HalfResult& h = r.half[i];
    j[names[i]] = h.ran ? half_json(h, cputime) : nlohmann::ordered_json();
    if (per_iter && h.ran && h.per_iter.present) j[std::string(names[i]) + "_per_iter"] = per_iter_json(h.per_iter);
    if (h.ran && !h.rank_own.empty()) j[std::string(names[i]) + "_per_rank"] = own_time_json(h);
  }
  j["actual_iterations"] = actual_iterations;
  j["experiment_name"] = impl;
  return j;
}

std::string json_tail(std::int64_t wrong, double avg_busbw, const std::string& end_time) {
  nlohmann::ordered_json j;
  j["out_of_bounds"] = {{"count", wrong}, {"okay", wrong == 0 ? "true" : "false"}};
  j["average_bus_bandwidth"] = {{"bandwidth", avg_busbw}, {"okay", "unchecked"}};
  if (!end_time.empty()) j["end_time"] = end_time;
  return "\n]," + j.dump().substr(1) + "\n";
}

}  // namespace parbench
