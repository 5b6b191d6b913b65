// API counts per host thread and per NVTX range, and the report PARBENCH_EMU_REPORT=FILE writes at exit.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "device/emu/emu.h"

namespace parbench::gpu_emu {
namespace {

struct Frame {
  std::string name;
  std::int64_t begin;
  ApiCounts start;
};

std::atomic<std::int64_t> g_sequence{0};  // pushes and pops of every thread, in order

struct ThreadCounts {
  ApiCounts now;
  std::vector<Frame> open;  // NVTX ranges pushed and not yet popped
  int id = 0;
};

std::atomic<int> g_next_thread{0};
thread_local ThreadCounts t_counts;

int thread_id() {
  if (t_counts.id == 0) t_counts.id = ++g_next_thread;
  return t_counts.id;
}

struct Regions {
  std::mutex m;
  std::vector<RegionRecord> done;
};
Regions& regions() {
  static Regions* r = new Regions;  // never destroyed: ranges may close during exit
  return *r;
}

constexpr std::size_t kMaxRegions = 200000;  // a bound on memory for very long runs

void write_report() {
  const char* path = std::getenv("PARBENCH_EMU_REPORT");
  if (!path || !*path) return;
  FILE* f = std::fopen(path, "w");
  if (!f) return;
  std::lock_guard<std::mutex> l(regions().m);
  std::fprintf(f, "{\"regions\": [");
  bool first = true;
  for (const RegionRecord& r : regions().done) {
    std::fprintf(f, "%s\n  {\"name\": ", first ? "" : ",");
    write_json_string(f, r.name);
    std::fprintf(f, ", \"thread\": %d, \"begin\": %lld, \"end\": %lld", r.thread, static_cast<long long>(r.begin),
                 static_cast<long long>(r.end));
    for (std::size_t i = 0; i < std::size_t(Count::kCount); ++i)
      std::fprintf(f, ", \"%s\": %lld", count_name(Count(i)), static_cast<long long>(r.counts.n[i]));
    std::fprintf(f, "}");
    first = false;
  }
  std::fprintf(f, "\n]}\n");
  std::fclose(f);
}

}  // namespace

void write_json_string(std::FILE* f, const std::string& s) {
  std::fputc('"', f);
  for (char c : s) {
    if (c == '"' || c == '\\') std::fputc('\\', f);
    std::fputc(static_cast<unsigned char>(c) >= 0x20 ? c : ' ', f);
  }
  std::fputc('"', f);
}

const char* count_name(Count c) {
  static const char* const names[] = {"cudaMalloc",  "cudaFree",    "cudaMallocHost", "cudaFreeHost",
                                      "device_sync", "stream_sync", "event_sync",     "host_wait",
                                      "launch",      "copy",        "pageable_copy",  "memset",
                                      "library_call", "legacy_stream",  "ipc_open",
                                      "graph_launch"};
  static_assert(sizeof(names) / sizeof(names[0]) == std::size_t(Count::kCount));
  return names[std::size_t(c)];
}

void count(Count c) {
  thread_id();
  ++t_counts.now.n[std::size_t(c)];
}

ApiCounts thread_counts() { return t_counts.now; }

void region_push(const char* name) {
  static const bool registered = [] { return std::atexit(write_report) == 0; }();
  (void)registered;
  thread_id();
  t_counts.open.push_back({name ? name : "", ++g_sequence, t_counts.now});
}

void region_pop() {
  if (t_counts.open.empty()) return;
  Frame f = std::move(t_counts.open.back());
  t_counts.open.pop_back();
  RegionRecord r{std::move(f.name), thread_id(), f.begin, ++g_sequence, {}};
  for (std::size_t i = 0; i < r.counts.n.size(); ++i) r.counts.n[i] = t_counts.now.n[i] - f.start.n[i];
  std::lock_guard<std::mutex> l(regions().m);
  if (regions().done.size() < kMaxRegions) regions().done.push_back(std::move(r));
}

std::vector<RegionRecord> finished_regions() {
  std::lock_guard<std::mutex> l(regions().m);
  return regions().done;
}

}  // namespace parbench::gpu_emu

extern "C" void parbench_emu_region_push(const char* name) { parbench::gpu_emu::region_push(name); }
extern "C" void parbench_emu_region_pop() { parbench::gpu_emu::region_pop(); }
