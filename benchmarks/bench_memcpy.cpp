// bench_memcpy: copy bandwidth of the chosen device over a sweep of sizes; the ceiling every
// collective on that device is measured against.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <set>
#include <vector>

#include "base/byte_pattern.h"
#include "core/allocator.h"
#include "base/error.h"
#include "core/csv_columns.h"
#include "core/memory.h"
#include "app/interrupt.h"
#include "app/output.h"
#include "app/program.h"
#include "benchmarks/memcpy_options.h"
#include "app/sizes.h"
#include "core/stream.h"
#include "profiles/range.h"

using namespace parbench;
using parbench::memcpy_bench::Options;

namespace {

// One size: copies timed back to back, then the destination checked byte for byte. Returns the CSV row.
std::vector<Cell> measure_size(const Options& o, const Device& dev, TrackedAllocator& alloc, Stream& stream,
                               std::uint64_t bytes, std::int64_t& wrong) {
  Buffer src(alloc, bytes, MemCategory::workspace), dst(alloc, bytes, MemCategory::workspace);
  std::vector<unsigned char> host(bytes), back(bytes);
  fill_pattern(host, bytes);  // a copy that skips or shifts bytes is caught
  device_memcpy(dev, src.data(), Device{}, host.data(), bytes);
  device_memset(dev, dst.data(), 0xA5, bytes);
  for (int i = 0; i < o.warmup; ++i) device_memcpy_async(dev, dst.data(), dev, src.data(), bytes, stream);
  stream.synchronize();
  // The timed copies go back to back on the stream between two events, with one wait at the end: a wait
  // per copy would add its round trip (~10 us on an H100) to every copy.
  Event start(dev), stop(dev);
  {
    PB_RANGE("timed batch", Category::compute, {.chunk = o.iters});  // NVTX: a tool can count the waits
    start.record(stream);
    for (int i = 0; i < o.iters; ++i) device_memcpy_async(dev, dst.data(), dev, src.data(), bytes, stream);
    stop.record(stream);
    stop.synchronize();
  }
  double us = Event::elapsed_ms(start, stop) * 1e3 / o.iters;
  device_memcpy(Device{}, back.data(), dev, dst.data(), bytes);
  wrong = pattern_mismatches(back, bytes);
  // GB/s counts bytes read plus bytes written, as memory-bandwidth tools do.
  return {device_name(dev), std::int64_t(bytes), us, us > 0 ? 2.0 * bytes / us / 1e3 : 0.0, wrong};
}

int run(const Options& o) {
  std::string why;
  Device dev = resolve_device(o.common.device, &why);
  if (!why.empty() && !o.common.quiet) std::cerr << why << "\n";
  auto sizes = memcpy_bench::checked_sizes(o);
  check_output_paths({{"--csv", o.common.csv}, {"--json", o.common.json}, {"--trace", o.common.trace}});
  StreamingTable rows(columns_of(csv::memcpy_bench::header), o.common.csv, o.common.json,
                      o.resume ? CsvRowFile::Mode::append : CsvRowFile::Mode::replace);
  std::set<std::string> done;  // --resume: "device,bytes" of the rows already in the CSV
  for (const auto& f : rows.existing_rows())
    if (f.size() >= 2) done.insert(f[0] + "," + f[1]);
  install_stop_handlers("bench_memcpy: stopped at once by a second SIGNAL" +
                        (o.common.csv.empty() ? std::string() : "; completed rows are in " + o.common.csv));
  // Two device buffers of the largest size, and its host pattern and read-back (on the device's memory too
  // when the device is the host).
  const std::uint64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  check_memory_fits("bench_memcpy's buffers for the largest size", (dev.on_host() ? 4 : 2) * largest, dev,
                    memcpy_bench::max_memory_bytes(o), 1,
                    "use smaller --sizes");
  TrackedAllocator alloc(dev);
  Stream stream(dev);
  int wrong_total = 0;
  for (std::uint64_t bytes : sizes) {
    if (done.count(device_name(dev) + "," + std::to_string(bytes))) continue;
    if (const int sig = stop_signal()) {
      std::cerr << "bench_memcpy: stopped by " << signal_name(sig) << " before size " << bytes << " bytes on "
                << device_name(dev) << "; " << rows.table().rows().size() << " completed sizes"
                << (o.common.csv.empty() ? "" : " are in " + o.common.csv) << "\n";
      if (!o.common.quiet) rows.table().write_text(std::cout);
      return exit_status_for_signal(sig);
    }
    std::int64_t wrong = 0;
    rows.add_row(measure_size(o, dev, alloc, stream, bytes, wrong));
    wrong_total += wrong != 0;
  }
  if (!o.common.quiet) rows.table().write_text(std::cout);
  if (wrong_total) std::cerr << "bench_memcpy: " << wrong_total << " size(s) copied wrong bytes\n";
  if (const int sig = stop_signal()) {
    std::cerr << "bench_memcpy: stopped by " << signal_name(sig) << " after the last size\n";
    return exit_status_for_signal(sig);
  }
  return wrong_total ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  return run_program({"Copy bandwidth of a device (read + write bytes per second)", "bench_memcpy"},
                     [&](CLI::App& app) { memcpy_bench::add_options(app, o); }, argc, argv,
                     [&](const CLI::App&) { return run(o); });
}
