// merge-traces: the per-process Chrome traces of an mpirun job (bench_train --trace T writes T.rankR.json on
// every process but rank 0's) as one trace, on one time axis.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "app/report.h"
#include "plots/figures.h"

namespace parbench::plots {

namespace {

nlohmann::json read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open trace '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw UsageError(path + ": not JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array())
    throw UsageError(path + ": not a Chrome trace (expected an object with a \"traceEvents\" array)");
  const auto origin = j.value("/otherData/time_origin_steady_ns"_json_pointer, nlohmann::json());
  if (!origin.is_number_integer())
    throw UsageError(path + ": no otherData.time_origin_steady_ns; only parbench traces can be put on one time "
                            "axis (bench_train --trace)");
  return j;
}

}  // namespace

void merge_traces(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw UsageError("merge-traces needs at least one input trace");
  std::vector<nlohmann::json> traces;
  std::int64_t origin = 0;
  for (const std::string& path : inputs) {
    traces.push_back(read_trace(path));
    const auto o = traces.back()["otherData"]["time_origin_steady_ns"].get<std::int64_t>();
    origin = traces.size() == 1 ? o : std::min(origin, o);
  }
  nlohmann::json events = nlohmann::json::array();
  std::map<std::int64_t, std::string> owner;  // pid (rank + 1) -> the file that holds it
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const auto shift_us =
        double(traces[i]["otherData"]["time_origin_steady_ns"].get<std::int64_t>() - origin) / 1e3;
    std::map<std::int64_t, bool> seen_here;
    for (nlohmann::json& e : traces[i]["traceEvents"]) {
      if (e.contains("pid") && e["pid"].is_number_integer()) {
        const auto pid = e["pid"].get<std::int64_t>();
        if (!seen_here[pid]) {
          seen_here[pid] = true;
          auto [it, fresh] = owner.emplace(pid, inputs[i]);
          if (!fresh)
            throw UsageError("both '" + it->second + "' and '" + inputs[i] + "' hold trace process " +
                             std::to_string(pid) + "; give each rank's trace once");
        }
      }
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + shift_us;
      events.push_back(std::move(e));
    }
  }
  // The devices the inputs name (otherData.device), kept for the figure's caption.
  nlohmann::json devices = nlohmann::json::array();
  for (const nlohmann::json& t : traces) {
    const nlohmann::json& other = t["otherData"];
    if (other.contains("device") && other["device"].is_string() &&
        std::find(devices.begin(), devices.end(), other["device"]) == devices.end())
      devices.push_back(other["device"]);
  }
  nlohmann::json out = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData",
                         {{"producer", "parbench"},
                          {"clock", "steady"},
                          {"time_origin_steady_ns", origin},
                          {"merged_from", inputs}}}};
  if (!devices.empty()) out["otherData"]["devices"] = std::move(devices);
  write_file_atomically(output, out.dump() + "\n");
}

}  // namespace parbench::plots
