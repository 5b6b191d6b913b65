// Checks the emulated GPU's API counts (PARBENCH_EMU_REPORT) of a program run with the emulator's NVTX tool, as
// one would read nsys's API summary:
//   check_report REPORT steady FIRST  bench_train: from step FIRST on, no cudaMalloc, cudaFree or device-wide
//                                     synchronisation in any range of any thread inside the steps; from step 1
//                                     on, no cudaFree and no device-wide synchronisation at all
//   check_report REPORT batch         bench_kernels, bench_memcpy: every timed batch of n calls queued at least n
//                                     launches, library calls or copies and waited on the host exactly once
//   check_report REPORT graph N       bench_<coll> -G N: every timed batch captured its n calls, launched the
//                                     graph N times and waited on the host exactly once
// Prints what it counted; exits 1 naming each range that broke a rule, 2 on bad usage or an unreadable report.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Region {
  std::string name;
  int thread;
  long long begin, end;
  nlohmann::json counts;
  long long operator[](const char* key) const { return counts.at(key).get<long long>(); }
};

// The value of "key=N" in a range name ("step mb=3" -> 3 for "mb").
std::optional<long long> field(const std::string& name, const std::string& key) {
  const auto at = name.find(" " + key + "=");
  if (at == std::string::npos) return std::nullopt;
  return std::stoll(name.substr(at + key.size() + 2));
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

int check_steady(const std::vector<Region>& regions, long long first) {
  int failures = 0;
  auto complain = [&](const Region& r, const std::string& what) {
    std::cout << "FAIL: range '" << r.name << "' on thread " << r.thread << ": " << what << "\n";
    ++failures;
  };
  long long window_begin = -1, window_end = -1, steady_steps = 0, last_step = -1;
  for (const Region& r : regions) {
    if (!starts_with(r.name, "step ")) continue;
    const long long step = field(r.name, "mb").value_or(-1);
    last_step = std::max(last_step, step);
    if (step >= 1 && (r["cudaFree"] != 0 || r["device_sync"] != 0))
      complain(r, std::to_string(r["cudaFree"]) + " cudaFree, " + std::to_string(r["device_sync"]) +
                      " device-wide synchronisations after the first step");
    if (step < first) continue;
    ++steady_steps;
    if (window_begin < 0 || r.begin < window_begin) window_begin = r.begin;
    window_end = std::max(window_end, r.end);
  }
  if (steady_steps == 0) {
    std::cout << "FAIL: no range 'step mb=N' with N >= " << first << " (last step " << last_step
              << "): run with the emulator's NVTX tool and enough --steps\n";
    return 1;
  }
  std::map<std::string, long long> totals;
  std::set<int> threads;
  long long inside = 0;
  for (const Region& r : regions) {
    if (r.begin < window_begin || r.end > window_end) continue;
    ++inside;
    threads.insert(r.thread);
    for (const char* key : {"cudaMalloc", "cudaFree", "device_sync"})
      if (r[key] != 0) complain(r, std::to_string(r[key]) + " " + key + " in the steady state");
    if (starts_with(r.name, "step "))
      for (const char* key : {"launch", "host_wait", "stream_sync", "copy", "pageable_copy", "library_call"})
        totals[key] += r[key];
  }
  std::cout << "steady state from step " << first << ": " << steady_steps << " step ranges, " << inside
            << " ranges on " << threads.size() << " threads inside them; per step range:";
  for (auto& [key, n] : totals) std::cout << " " << key << " " << double(n) / double(steady_steps);
  std::cout << "\n";
  return failures ? 1 : 0;
}

int check_batches(const std::vector<Region>& regions) {
  int failures = 0, batches = 0;
  long long largest = 0;
  for (const Region& r : regions) {
    if (!starts_with(r.name, "timed batch")) continue;
    ++batches;
    const long long calls = field(r.name, "chunk").value_or(-1);
    largest = std::max(largest, calls);
    const long long queued = r["launch"] + r["library_call"] + r["copy"] + r["memset"];
    if (r["host_wait"] != 1 || queued < calls) {
      std::cout << "FAIL: range '" << r.name << "' on thread " << r.thread << ": " << r["host_wait"]
                << " host waits (one expected) for " << queued << " launches, library calls and copies (" << calls
                << " calls)\n";
      ++failures;
    }
  }
  if (largest < 2) {
    std::cout << "FAIL: no timed batch of more than one call among " << batches << " batches\n";
    return 1;
  }
  std::cout << batches << " timed batches of up to " << largest << " calls, each waited on the host once\n";
  return failures ? 1 : 0;
}

// -G N: every timed batch captured its calls (each counted once, as a launch or a library call, at the capture),
// launched the graph N times and waited on the host once.
int check_graphs(const std::vector<Region>& regions, long long launches) {
  int failures = 0, batches = 0;
  for (const Region& r : regions) {
    if (!starts_with(r.name, "timed batch")) continue;
    ++batches;
    const long long calls = field(r.name, "chunk").value_or(-1);
    const long long captured = r["launch"] + r["library_call"];
    if (r["graph_launch"] != launches || r["host_wait"] != 1 || captured < calls) {
      std::cout << "FAIL: range '" << r.name << "' on thread " << r.thread << ": " << r["graph_launch"]
                << " graph launches (" << launches << " expected), " << r["host_wait"] << " host waits (one expected), "
                << captured << " captured launches and library calls (" << calls << " calls)\n";
      ++failures;
    }
  }
  if (batches == 0) {
    std::cout << "FAIL: no timed batch\n";
    return 1;
  }
  std::cout << batches << " timed batches, each a graph launched " << launches << " times and waited for once\n";
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: check_report REPORT steady FIRST_STEP | check_report REPORT batch | check_report REPORT graph LAUNCHES";
  const std::string mode = argc >= 3 ? argv[2] : "";
  if (argc < 3 || (mode == "steady" || mode == "graph" ? argc != 4 : mode != "batch" || argc != 3)) {
    std::cerr << usage << "\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::vector<Region> regions;
  try {
    const nlohmann::json report = nlohmann::json::parse(in);
    for (const auto& r : report.at("regions"))
      regions.push_back({r.at("name"), r.at("thread"), r.at("begin"), r.at("end"), r});
  } catch (const std::exception& e) {
    std::cerr << "check_report: cannot read the report " << argv[1] << ": " << e.what() << "\n";
    return 2;
  }
  if (mode == "batch") return check_batches(regions);
  if (mode == "graph") return check_graphs(regions, std::stoll(argv[3]));
  return check_steady(regions, std::stoll(argv[3]));
}
