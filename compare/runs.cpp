// See runs.h.
#include "compare/runs.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/output.h"
#include "base/error.h"

namespace parbench::compare {

std::string RowKey::text() const {
  return collective + " " + (impl.empty() ? "-" : impl) + " " + std::to_string(bytes) + " " + dtype + " " + op +
         (root >= 0 ? " root " + std::to_string(root) : "") + (inplace ? " in-place" : " out-of-place");
}

std::string collective_of_program(std::string name) {
  if (const std::size_t slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (name.rfind("bench_", 0) == 0) name = name.substr(6);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) name.resize(name.size() - 5);
  name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
  return name;
}

std::string short_dtype(const std::string& name) {
  static const std::map<std::string, std::string> names = {{"double", "f64"}, {"float", "f32"},  {"half", "f16"},
                                                          {"bfloat16", "bf16"}, {"int32", "i32"}, {"int8", "i8"},
                                                          {"uint8", "u8"}};
  const auto it = names.find(name);
  return it == names.end() ? name : it->second;
}

namespace {

void add_sample(Run& run, const RowKey& key, double time_us, double busbw) {
  RowSamples& s = run.rows[key];
  s.time_us.push_back(time_us);
  s.busbw_sum += busbw, ++s.busbw_n;
}

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw UsageError(path + ": " + why +
                   "; accepted: a collective benchmark's --csv or --json file, or nccl-tests' -J JSON or output table");
}

// --csv: the header names the columns.
void read_csv(Run& run, std::istream& in) {
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv_line(line);
  auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) bad(run.path, std::string("no column '") + name + "' in its header");
    return std::size_t(it - header.begin());
  };
  const std::size_t c = column("collective"), impl = column("impl"), dtype = column("dtype"), op = column("op"),
                    root = column("root"), inplace = column("inplace"), bytes = column("bytes"),
                    time = column("time_us"), busbw = column("busbw_gbps");
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const std::vector<std::string> f = split_csv_line(line);
    if (f.size() != header.size()) bad(run.path, "line " + std::to_string(n) + " has " + std::to_string(f.size()) +
                                                 " fields where the header has " + std::to_string(header.size()));
    try {
      add_sample(run, {collective_of_program(f[c]), f[impl], std::stoull(f[bytes]), f[dtype], f[op], std::stoi(f[root]),
                       std::stoi(f[inplace])},
                 std::stod(f[time]), std::stod(f[busbw]));
    } catch (const std::logic_error&) {
      bad(run.path, "line " + std::to_string(n) + " has a number that does not read as one");
    }
  }
}

// --json: the CSV's rows as objects.
void read_our_json(Run& run, const nlohmann::json& rows) {
  for (const auto& r : rows)
    add_sample(run,
               {collective_of_program(r.at("collective").get<std::string>()), r.at("impl").get<std::string>(),
                r.at("bytes").get<std::uint64_t>(), r.at("dtype").get<std::string>(), r.at("op").get<std::string>(),
                r.at("root").get<int>(), r.at("inplace").get<int>()},
               r.at("time_us").get<double>(), r.at("busbw_gbps").get<double>());
}

// -J: results with out_of_place and in_place halves, per-iteration times under <half>_per_iter with -I 1; the
// collective from the command line in "args".
void read_nccl_json(Run& run, const nlohmann::json& j) {
  std::string program;  // the command line's first word: "args" is a list of words (or, in some writers, one text)
  if (const auto args = j.find("args"); args != j.end()) {
    if (args->is_array() && !args->empty() && args->front().is_string()) program = args->front().get<std::string>();
    if (args->is_string()) std::istringstream(args->get<std::string>()) >> program;
  }
  // nccl-tests' "all_reduce_perf" or our "bench_allreduce"; anything else says nothing of the collective.
  const std::string base = program.substr(program.find_last_of('/') + 1);
  const bool named = base.rfind("bench_", 0) == 0 || (base.size() > 5 && base.compare(base.size() - 5, 5, "_perf") == 0);
  const std::string collective = named ? collective_of_program(base) : "";
  for (const auto& r : j.at("results")) {
    const std::string root_text = r.value("root", std::string("-1"));
    const std::string impl = r.value("experiment_name", std::string());
    for (int half = 0; half < 2; ++half) {
      const char* name = half ? "in_place" : "out_of_place";
      if (!r.contains(name) || r.at(name).is_null()) continue;
      const auto& h = r.at(name);
      const double time = h.contains("time") ? h.at("time").get<double>() : h.at("cpu_time").get<double>();
      const RowKey key{collective, impl, r.at("size").get<std::uint64_t>(), short_dtype(r.at("type").get<std::string>()),
                       r.value("redop", std::string("none")), std::stoi(root_text), half};
      const std::string per_iter = std::string(name) + "_per_iter";
      if (r.contains(per_iter) && r.at(per_iter).contains("times_us")) {
        RowSamples& s = run.rows[key];
        for (double t : r.at(per_iter).at("times_us")) s.time_us.push_back(t);
        s.busbw_sum += h.at("bus_bw").get<double>(), ++s.busbw_n;
      } else {
        add_sample(run, key, time, h.at("bus_bw").get<double>());
      }
    }
  }
}

bool is_number(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch); });
}

// The stdout table: "# Collective test starting: PROGRAM", "# impl: NAME" before each of our blocks, the column
// header (with -I the halves have 4 columns more), then rows of size, count, type, redop, root and per half time,
// algbw, busbw, #wrong ("-" where the half did not run).
void read_table(Run& run, std::istream& in) {
  std::string line, collective, impl;
  std::size_t half_width = 4;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> f;
    for (std::string w; words >> w;) f.push_back(w);
    if (f.empty()) continue;
    if (f[0] == "#") {
      if (line.find("# Collective test starting: ") == 0) collective = collective_of_program(f.back());
      if (line.find("# impl: ") == 0) impl = f.back();
      if (line.find("i_min") != std::string::npos) half_width = 8;
      continue;
    }
    if (f.size() < 5 + 2 * half_width || !is_number(f[0]) || !is_number(f[1])) continue;
    for (int half = 0; half < 2; ++half) {
      const std::size_t at = 5 + half * half_width;
      if (f[at] == "-") continue;
      try {
        add_sample(run, {collective, impl, std::stoull(f[0]), short_dtype(f[2]), f[3], std::stoi(f[4]), half},
                   std::stod(f[at]), std::stod(f[at + 2]));
      } catch (const std::logic_error&) {
        bad(run.path, "a row's time or busbw does not read as a number: " + line);
      }
    }
  }
}

}  // namespace

Run read_run(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + path + " (a run: --csv, --json, -J or the output table)");
  Run run{path, "", {}};
  std::string first;
  while (in.peek() != EOF && std::isspace(in.peek())) in.get();
  const int lead = in.peek();
  if (lead == '{' || lead == '[') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
      if (lead == '[') run.format = "json", read_our_json(run, j);
      else run.format = "nccl-tests json", read_nccl_json(run, j);
    } catch (const nlohmann::json::exception& e) {
      bad(path, std::string("JSON that is not a run's (") + e.what() + ")");
    }
  } else {
    std::getline(in, first);
    in.clear();
    in.seekg(0);
    if (first.rfind("collective,", 0) == 0) run.format = "csv", read_csv(run, in);
    else run.format = "nccl-tests table", read_table(run, in);
  }
  if (run.rows.empty()) bad(path, "no rows found (read as " + run.format + ")");
  return run;
}

}  // namespace parbench::compare
