// The communication thread.
#include "parallel/comm_worker.h"

#include <utility>

#include "base/host_order.h"
#include "core/memory.h"

namespace parbench {

CommWorker::CommWorker(Device device)
    : thread_([this, device] {
        try {
          make_device_current(device);
        } catch (...) {
          std::lock_guard lock(mutex_);
          error_ = std::current_exception();  // reported by the first wait()
        }
        loop();
      }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

// What the caller and the worker have waited for on the GPU passes with the work and back with wait()
// (base/host_order.h): the work may use what the caller finished, the caller what the work finished.
void CommWorker::submit(std::function<void()> work) {
  host_order::publish(&queue_);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  work_cv_.notify_one();  // only the worker waits for work
}

void CommWorker::wait() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
  host_order::receive(&idle_cv_);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void CommWorker::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    auto work = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    // After a failure the rest of the queue is skipped: the ranks no longer agree on what runs next.
    const bool skip = error_ != nullptr;
    lock.unlock();
    host_order::receive(&queue_);
    try {
      if (!skip) work();
    } catch (...) {
      std::lock_guard relock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    host_order::publish(&idle_cv_);
    lock.lock();
    --running_;
    if (queue_.empty()) idle_cv_.notify_all();  // wait() has nothing to check before the queue drains
  }
}

}  // namespace parbench
