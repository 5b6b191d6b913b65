// The stop flag and the signal handlers (async-signal-safe: atomics, write(2) and _exit(2) only).
#include "app/interrupt.h"

#include <errno.h>  // program_invocation_short_name
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace parbench {
namespace {

std::atomic<int> g_stop{0};
std::atomic<bool> g_abandon{false};
// The message of an immediate exit, split around "SIGNAL" and built before any signal can arrive (a handler
// must not allocate).
char g_before[512] = {0}, g_after[512] = {0};
std::size_t g_before_len = 0, g_after_len = 0;
bool g_named = false;  // the note has "SIGNAL" in it

// set_signal_context's text, double-buffered: a writer fills the buffer the handler is not pointed at, then
// publishes it.
char g_context[2][512] = {{0}, {0}};
std::size_t g_context_len[2] = {0, 0};
std::atomic<int> g_context_at{-1};  // -1: none yet

void write_all(const char* text, std::size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(2, text, len);
    if (n <= 0) return;
    text += n, len -= std::size_t(n);
  }
}

void on_stop_signal(int sig) {
  int expected = 0;
  const bool first = g_stop.compare_exchange_strong(expected, sig);
  if (first && !g_abandon.load()) {  // stop after the measurement in progress, saying now what that is
    if (const int at = g_context_at.load(); at >= 0) {
      const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
      write_all(program_invocation_short_name, ::strlen(program_invocation_short_name));
      write_all(": ", 2);
      write_all(name, ::strlen(name));
      write_all(" while ", 7);
      write_all(g_context[at], g_context_len[at]);
      const char tail[] = "; finishing it (a second signal ends at once)\n";
      write_all(tail, sizeof tail - 1);
    }
    return;
  }
  if (g_before_len + g_after_len > 0) {
    write_all(g_before, g_before_len);
    const char* name = !g_named ? "" : sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
    write_all(name, ::strlen(name));
    write_all(g_after, g_after_len);
  }
  ::_exit(128 + sig);
}

void keep(const std::string& text, char* buffer, std::size_t capacity, std::size_t& len) {
  len = std::min(text.size(), capacity - 1);
  ::memcpy(buffer, text.data(), len);
}

}  // namespace

void install_stop_handlers(const std::string& note, StopMode mode) {
  const std::size_t at = note.find("SIGNAL");
  const std::string before = at == std::string::npos ? note : note.substr(0, at);
  const std::string after = (at == std::string::npos ? "" : note.substr(at + 6)) + (note.empty() ? "" : "\n");
  keep(before, g_before, sizeof g_before, g_before_len);
  keep(after, g_after, sizeof g_after, g_after_len);
  g_named = at != std::string::npos;
  g_abandon.store(mode == StopMode::abandon);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls resume: the measurement in progress finishes on every rank
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void set_signal_context(const std::string& text) {
  const int next = g_context_at.load() == 0 ? 1 : 0;
  keep(text, g_context[next], sizeof g_context[next], g_context_len[next]);
  g_context_at.store(next);
}

int stop_signal() { return g_stop.load(std::memory_order_relaxed); }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

}  // namespace parbench
