// simt internals: the jobs that run a launch's blocks and the pools of OS threads that help the launching thread
// run them (host_runtime.cpp's launch).
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "device/simt/block.h"
#include "device/simt/fiber.h"

namespace parbench::simt::detail {

extern std::atomic<void (*)()> g_block_thread_hook;  // set_block_thread_hook's

// One block-running job: the launching thread and up to max_helpers pool threads take block
// numbers from `next` until none are left.
struct Job : std::enable_shared_from_this<Job> {
  const LaunchState* launch = nullptr;
  std::uint64_t total = 0;
  std::uint64_t mul = 1, add = 0;  // block order: (mul * i + add) mod total, a permutation
  int max_helpers = 0;
  std::atomic<std::uint64_t> next{0}, finished{0};
  std::atomic<bool> failed{false};
  int claimed = 0;             // shared-pool helpers that took the job (the pool's mutex guards it)
  std::atomic<int> extra{0};   // resident-pool threads asked for
  std::mutex m;
  std::condition_variable done;
  std::exception_ptr error;

  std::uint64_t block(std::uint64_t i) const {
    return std::uint64_t((static_cast<unsigned __int128>(mul) * i + add) % total);
  }
  void work() {
    for (;;) {
      const std::uint64_t i = next.fetch_add(1);
      if (i >= total) return;
      if (!failed.load()) {
        try {
          run_block(*launch, block(i));
        } catch (...) {
          std::lock_guard<std::mutex> l(m);
          if (!error) error = std::current_exception();
          failed = true;
        }
      }
      if (finished.fetch_add(1) + 1 == total) {
        std::lock_guard<std::mutex> l(m);
        done.notify_all();
      }
    }
  }
};

// The OS threads that help launching threads run blocks. The shared pool has as many threads as the largest launch
// asked for, and a launch gets what is free (run). The resident pool adds a thread to a co-resident launch each time
// one of its blocks starts to spin while others have not started (help): a thread is promised at the request, made
// if none is idle, so however the blocks wait on each other, all of them end up running at once.
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void run(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard<std::mutex> l(m_);
      while (int(threads_.size()) < job->max_helpers) spawn();
      jobs_.push_back(job);
    }
    cv_.notify_all();
    job->work();
    {
      std::unique_lock<std::mutex> l(job->m);
      job->done.wait(l, [&] { return job->finished.load() == job->total; });
    }
    {
      std::lock_guard<std::mutex> l(m_);
      retire(job);
    }
    // The error moves out of the job: a helper may drop the job's last reference after this thread caught the
    // exception, and the exception object must not die there (its count lives in the uninstrumented libstdc++, so
    // TSan would see a helper free what this thread read).
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> l(job->m);
      error = std::move(job->error);
    }
    if (error) std::rethrow_exception(error);
  }
  void help(std::shared_ptr<Job> job) {
    {
      std::lock_guard<std::mutex> l(m_);
      if (idle_ - owed_ < 1) spawn();  // keeps idle_ >= owed_: every request finds a thread
      ++owed_;
      requests_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

 private:
  void spawn() {  // m_ held
    ++idle_;
    threads_.emplace_back([this] { loop(); });
  }
  void retire(const std::shared_ptr<Job>& job) {  // m_ held
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  // The next help request, or the first queued job that still takes help (dropping those that take no more).
  std::shared_ptr<Job> next_job() {  // m_ held
    if (!requests_.empty()) {
      std::shared_ptr<Job> job = std::move(requests_.front());
      requests_.pop_front();
      --owed_;
      return job;
    }
    while (!jobs_.empty()) {
      std::shared_ptr<Job> job = jobs_.front();
      if (job->next.load() < job->total && job->claimed < job->max_helpers) {
        ++job->claimed;
        return job;
      }
      retire(job);
    }
    return nullptr;
  }
  void loop() {
    install_guard_handler();
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      std::shared_ptr<Job> job;
      cv_.wait(l, [&] { return stop_ || (job = next_job()) != nullptr; });
      if (stop_) return;
      --idle_;
      l.unlock();
      if (auto hook = g_block_thread_hook.load()) hook();
      job->work();
      job.reset();
      l.lock();
      ++idle_;
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;      // launches that take free threads
  std::deque<std::shared_ptr<Job>> requests_;  // help requests, a thread each
  std::vector<std::thread> threads_;
  int idle_ = 0;  // threads waiting for work
  int owed_ = 0;  // help requests no thread took up yet
  bool stop_ = false;
};

}  // namespace parbench::simt::detail
