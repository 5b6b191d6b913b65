// The emulated GPU's operations and streams, for the files that make and wait for them (streams.cpp, cuda_runtime.cpp).
#pragma once
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/emu/emu.h"

namespace parbench::gpu_emu {

// One queued piece of device work (a kernel, a copy, an event record, a wait); fields after `deps` are
// guarded by the scheduler's mutex, but for `started`, which the stream's worker writes before the op is done.
struct Op {
  std::string what;
  std::function<void()> work;
  std::vector<OpPtr> deps;
  bool done = false;
  std::chrono::steady_clock::time_point enqueued;
  std::chrono::steady_clock::time_point started;  // when the worker began its work (after the fuzz delay)
  // When it finished; for an op without work (an event record, a wait) the moment the stream reached it: the
  // latest of its enqueueing, the end of the stream's previous op and the end of what it waited for, as a GPU
  // timestamps an event, so neither the fuzz delay nor the worker's scheduling moves an event's time.
  std::chrono::steady_clock::time_point finished;
  VClock clock;  // what happens before it (hazards.h); set when queued, then never changed
};

struct Capture;  // graphs.cpp

struct StreamState {
  std::uint32_t magic = 0;
  int device = 0;
  bool legacy = false;        // the device's legacy default stream (handle 0)
  bool non_blocking = false;  // cudaStreamNonBlocking: no implicit ordering with the legacy stream
  bool destroyed = false;
  std::uint64_t id = 0;
  int timeline = 0;  // its index in the hazard checker's clocks
  VClock clock;      // the clock of its latest op
  std::deque<OpPtr> queue;  // queued and not finished, in order
  OpPtr last;               // the latest op queued
  std::chrono::steady_clock::time_point last_finished;  // of the last op the worker finished
  std::shared_ptr<Capture> capture;  // while the stream captures; guarded by graphs.cpp's mutex
};

StreamState* create_stream(int device, bool non_blocking);
// The scheduler's mutex, which guards every op, stream and hazard clock.
std::mutex& scheduler_mutex();
void destroy_stream(StreamState* s);
// Blocks until every op is done; counts one host wait.
void wait_ops(const std::vector<OpPtr>& ops, const char* why);
std::chrono::steady_clock::time_point finish_time(const OpPtr& op);
// PARBENCH_EMU_STREAM_LOG=FILE (stream_log.cpp): whether finished ops are logged (the first call arranges the
// file's writing at exit), and the logging of one, called by its stream's worker.
bool stream_log_on();
void log_op(const StreamState& s, const Op& op);

}  // namespace parbench::gpu_emu
