// The RAII profiling range: one NVTX range in the "parbench" domain plus one Chrome-trace event.
// Usage: PB_RANGE("forward", Category::compute, {.layer = l, .microbatch = mb});
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "profiles/category.h"
#include "profiles/trace.h"

namespace parbench {

// A range from construction to destruction on the calling thread's track, timed by the host clock; or, under a
// TraceStream, timed by events on that stream and put on the stream's track. The name is copied only when something
// records it. Cheap when disabled: one atomic load and one branch.
class Range {
 public:
  Range(std::string_view name, Category cat, const RangeArgs& args = {}) noexcept {
    const unsigned mode = TraceRecorder::instance().mode();
    if (mode != 0) [[unlikely]]
      begin(mode, name, cat, args);
  }
  ~Range() {
    if (active_ != 0) [[unlikely]]
      end();
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  void begin(unsigned mode, std::string_view name, Category cat, const RangeArgs& args) noexcept;
  void end() noexcept;

  unsigned active_ = 0;  // TraceRecorder::kTrace / kNvtx bits this range started
  Category cat_ = Category::compute;
  int pid_ = 0;
  int tid_ = 0;
  std::int64_t start_ns_ = 0;
  const Stream* stream_ = nullptr;  // under a TraceStream: the stream timing this range, and its begin event
  Event* begin_event_ = nullptr;
  RangeArgs args_;
  std::string name_;
};

}  // namespace parbench

#define PB_RANGE_CAT2_(a, b) a##b
#define PB_RANGE_CAT_(a, b) PB_RANGE_CAT2_(a, b)

// A range to the end of the enclosing scope: PB_RANGE(name, category[, RangeArgs{...}]).
// The braces of a designated initializer may be passed directly: PB_RANGE("fwd", c, {.layer = 1}).
#define PB_RANGE(...) ::parbench::Range PB_RANGE_CAT_(pb_range_, __LINE__)(__VA_ARGS__)

// A range named after the enclosing function: PB_FUNCTION_RANGE(category[, RangeArgs{...}]).
#define PB_FUNCTION_RANGE(...) \
  ::parbench::Range PB_RANGE_CAT_(pb_range_, __LINE__)(__func__, __VA_ARGS__)
