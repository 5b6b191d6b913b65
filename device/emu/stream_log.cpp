// PARBENCH_EMU_STREAM_LOG=FILE: every finished stream operation (GPU, stream, when its work began and ended on the
// stream's worker), written as JSON at exit, so a test can see from the emulator itself which work overlapped.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"

namespace parbench::gpu_emu {
namespace {

struct OpRecord {
  int device;
  std::uint64_t stream;
  bool legacy;
  std::string what;
  double start_us, end_us;
};

struct StreamLog {
  std::mutex m;
  std::string path;
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  std::vector<OpRecord> ops;
  std::int64_t dropped = 0;  // ops past the bound, counted only
};

constexpr std::size_t kMaxOps = 200000;  // a bound on memory for very long runs, as for the region report

StreamLog* stream_log() {  // nullptr when the setting is off
  static StreamLog* log = []() -> StreamLog* {
    const char* path = std::getenv("PARBENCH_EMU_STREAM_LOG");
    if (!path || !*path) return nullptr;
    auto* l = new StreamLog;  // never destroyed: workers may still finish ops while the program exits
    l->path = path;
    return l;
  }();
  return log;
}

void write_stream_log() {
  StreamLog* log = stream_log();
  FILE* f = std::fopen(log->path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "parbench-emu: cannot write PARBENCH_EMU_STREAM_LOG=%s\n", log->path.c_str());
    return;
  }
  std::lock_guard<std::mutex> l(log->m);
  std::fprintf(f, "{\"dropped\": %lld, \"ops\": [", static_cast<long long>(log->dropped));
  bool first = true;
  for (const OpRecord& r : log->ops) {
    std::fprintf(f, "%s\n  {\"device\": %d, \"stream\": %llu, \"legacy\": %s, \"what\": ", first ? "" : ",", r.device,
                 static_cast<unsigned long long>(r.stream), r.legacy ? "true" : "false");
    write_json_string(f, r.what);
    std::fprintf(f, ", \"start_us\": %.1f, \"end_us\": %.1f}", r.start_us, r.end_us);
    first = false;
  }
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
}

}  // namespace

bool stream_log_on() {
  static const bool on = [] {
    if (!stream_log()) return false;
    std::atexit(write_stream_log);
    return true;
  }();
  return on;
}

void log_op(const StreamState& s, const Op& op) {
  StreamLog* log = stream_log();
  if (!log) return;
  auto us = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t - log->epoch).count();
  };
  std::lock_guard<std::mutex> l(log->m);
  if (log->ops.size() >= kMaxOps) {
    ++log->dropped;
    return;
  }
  log->ops.push_back({s.device, s.id, s.legacy, op.what, us(op.started), us(op.finished)});
}

}  // namespace parbench::gpu_emu
