// Helpers shared by the profiles tests: a scratch folder, file reading, trace parsing and a
// nesting check that every X event on a track is inside or after the events before it.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "profiles/trace.h"
#include "tests/test_files.h"

namespace pbtest {

namespace fs = std::filesystem;

// Every test starts from an empty, enabled recorder and leaves it disabled and empty; written() is the trace file.
class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rec().disable();
    rec().clear();
    rec().enable();
  }
  void TearDown() override {
    rec().disable();
    rec().clear();
  }
  static parbench::TraceRecorder& rec() { return parbench::TraceRecorder::instance(); }
  nlohmann::json written() {
    const auto path = dir_.path() / "trace.json";
    rec().write(path.string());
    return nlohmann::json::parse(read_file(path));
  }
  ScratchDir dir_;
};

inline std::vector<nlohmann::json> complete_events(const nlohmann::json& trace) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") out.push_back(e);
  return out;
}

// Integer nanoseconds from the microsecond fields, so rounding cannot fake an overlap.
inline long long ns(const nlohmann::json& v) { return std::llround(v.get<double>() * 1000.0); }
inline long long start_ns(const nlohmann::json& e) { return ns(e.at("ts")); }
inline long long end_ns(const nlohmann::json& e) { return ns(e.at("ts")) + ns(e.at("dur")); }

// Every pair of X events on one (pid, tid) track is either disjoint or one contains the other.
inline ::testing::AssertionResult properly_nested(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::vector<nlohmann::json>> tracks;
  for (const auto& e : complete_events(trace))
    tracks[{e.at("pid").get<int>(), e.at("tid").get<int>()}].push_back(e);
  for (auto& [key, evs] : tracks) {
    std::sort(evs.begin(), evs.end(), [](const auto& a, const auto& b) {
      return start_ns(a) != start_ns(b) ? start_ns(a) < start_ns(b) : end_ns(a) > end_ns(b);
    });
    std::vector<long long> open_ends;  // ends of the enclosing events
    for (const auto& e : evs) {
      while (!open_ends.empty() && open_ends.back() <= start_ns(e)) open_ends.pop_back();
      if (!open_ends.empty() && end_ns(e) > open_ends.back())
        return ::testing::AssertionFailure()
               << "event " << e.dump() << " overlaps its enclosing event on track pid "
               << key.first << " tid " << key.second;
      open_ends.push_back(end_ns(e));
    }
  }
  return ::testing::AssertionSuccess();
}

// Per track the file lists events by start time, the longer first on equal starts, so viewers
// that take the file order meet every parent before its children.
inline ::testing::AssertionResult emitted_in_order(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, nlohmann::json> last;
  for (const auto& e : complete_events(trace)) {
    auto key = std::make_pair(e.at("pid").get<int>(), e.at("tid").get<int>());
    auto it = last.find(key);
    if (it != last.end()) {
      const auto& p = it->second;
      if (start_ns(e) < start_ns(p) || (start_ns(e) == start_ns(p) && end_ns(e) > end_ns(p)))
        return ::testing::AssertionFailure() << e.dump() << " listed after " << p.dump();
    }
    last[key] = e;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace pbtest
