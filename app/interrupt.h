// SIGINT and SIGTERM for the benchmark programs. In `finish_current` mode the first signal asks the program to
// stop after the measurement in progress (its rows are already on disk, see app/output.h) and a second one ends
// the process at once; in `abandon` mode the first one ends it at once (for programs whose only row needs the
// whole run). Either way the exit status is 128 + the signal (130, 143), as a shell reports a process killed by it.
#pragma once
#include <string>

namespace parbench {

enum class StopMode { finish_current, abandon };

// Installs the handlers. When the process ends at once it prints `note` with "SIGNAL" replaced by the signal's
// name, e.g. "bench_train: stopped by SIGNAL during training; nothing written" (empty: prints nothing).
void install_stop_handlers(const std::string& note, StopMode mode = StopMode::finish_current);

// What this process is doing now ("rank 0 measures allreduce/ring of 4096 bytes ..."), kept where a signal handler
// can read it: the first signal in finish_current mode then says at once what it interrupts (under mpirun a rank
// that died makes mpirun signal the others, which may be stuck waiting for it and never finish).
void set_signal_context(const std::string& text);

// 0, or the first stop signal received (SIGINT or SIGTERM).
int stop_signal();

// "SIGINT", "SIGTERM", or "signal N".
std::string signal_name(int sig);

// 128 + sig.
inline int exit_status_for_signal(int sig) { return 128 + sig; }

}  // namespace parbench
