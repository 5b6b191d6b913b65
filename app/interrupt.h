// SIGINT and SIGTERM for the benchmark programs: the first one asks the program to stop after the measurement in
// progress (its rows are already on disk, see app/output.h); a second one ends the process at once. Either way
// the exit status is 128 + the signal (130, 143), as a shell reports a process killed by it.
#pragma once
#include <string>

namespace parbench {

// Installs the handlers. `second_signal_note` is printed (with the signal's name) when a second signal ends the
// process at once, e.g. "bench_allreduce: stopped at once; completed rows are in out.csv".
void install_stop_handlers(const std::string& second_signal_note);

// 0, or the first stop signal received (SIGINT or SIGTERM).
int stop_signal();

// "SIGINT", "SIGTERM", or "signal N".
std::string signal_name(int sig);

// 128 + sig.
inline int exit_status_for_signal(int sig) { return 128 + sig; }

// Test and tool hook: behaves as if `sig` had been received (the first time).
void request_stop(int sig);

}  // namespace parbench
