// The stop flag and the signal handlers (async-signal-safe: an atomic store, write(2) and _exit(2) only).
#include "app/interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace parbench {
namespace {

std::atomic<int> g_stop{0};
// The message of a second signal, built before any signal can arrive (a handler must not allocate).
char g_note[512] = {0};
std::size_t g_note_len = 0;

void on_stop_signal(int sig) {
  int expected = 0;
  if (g_stop.compare_exchange_strong(expected, sig)) return;  // the first: stop after the current measurement
  if (g_note_len > 0) {
    ssize_t ignored = ::write(2, g_note, g_note_len);
    (void)ignored;
  }
  ::_exit(128 + sig);
}

}  // namespace

void install_stop_handlers(const std::string& second_signal_note) {
  const std::string note = second_signal_note.empty() ? "" : second_signal_note + "\n";
  g_note_len = std::min(note.size(), sizeof g_note - 1);
  ::memcpy(g_note, note.data(), g_note_len);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls resume: the measurement in progress finishes on every rank
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop.load(std::memory_order_relaxed); }

void request_stop(int sig) {
  int expected = 0;
  g_stop.compare_exchange_strong(expected, sig);
}

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

}  // namespace parbench
