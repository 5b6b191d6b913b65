// Running a bench program from a test: its exit status and its stdout and stderr together.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace pbtest {

struct Result {
  int status;
  std::string output;
};

inline Result run(const std::string& cmd) {
  Result r{-1, {}};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, got);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string bench(const std::string& name) { return std::string(PB_BENCH_DIR) + "/bench_" + name; }

#ifdef PB_MPIEXEC
inline std::string mpirun(int n) {
  return std::string(PB_MPIEXEC) + " --allow-run-as-root --oversubscribe -np " + std::to_string(n) + " ";
}
#endif

}  // namespace pbtest
