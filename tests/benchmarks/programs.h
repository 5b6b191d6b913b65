// Running the programs from a test: a command to completion (status, output, seconds), or started in the
// background to be signalled mid-run.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/test_files.h"

namespace pbtest {

inline std::string bin(const std::string& program) { return std::string(PB_BIN_DIR) + "/" + program; }

// An empty folder of this process's own under the temporary directory (tests run in parallel).
inline std::filesystem::path fresh_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / ("pb_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

#ifdef PB_MPIEXEC
inline std::string mpirun(int n) {
  return std::string(PB_MPIEXEC) + " --allow-run-as-root --oversubscribe -np " + std::to_string(n) + " ";
}
#endif

struct Finished {
  int status = -1;  // exit status; 128 + signal when killed by one
  std::string output;
  double seconds = 0;
};

inline Finished run(const std::string& cmd) {
  Finished r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, got);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : (WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}


// A program started in the background (its own process group, stdout and stderr to `log`).
class Background {
 public:
  Background(const std::string& cmd, const std::filesystem::path& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >" + log.string() + " 2>&1").c_str(), (char*)nullptr);
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  ~Background() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) { kill(pid_, sig); }
  // Waits up to `seconds` for the exit; the status as Finished::status, or -1 on timeout (then killed).
  int wait(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : (WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string log() const { return pbtest::read_file(log_); }

 private:
  pid_t pid_ = -1;
  std::filesystem::path log_;
};

// Polls until `pred` holds or `seconds` pass; returns whether it held.
template <class Pred>
bool eventually(double seconds, Pred pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace pbtest
