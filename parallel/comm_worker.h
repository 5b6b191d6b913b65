// A communication thread per rank: collectives queued in order and run while the caller computes (the CPU
// counterpart of a second CUDA stream). Collectives must be issued in the same order on every rank; one FIFO
// thread keeps that order.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "core/device.h"

namespace parbench {

class CommWorker {
 public:
  explicit CommWorker(Device device);  // the thread makes `device` current (core/memory.h) before any work
  ~CommWorker();
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;
  void submit(std::function<void()> work);
  // Blocks until everything submitted has run; rethrows the first failure.
  void wait();

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable work_cv_;  // the worker waits here for work (or the end)
  std::condition_variable idle_cv_;  // wait() waits here until everything submitted has run
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace parbench
