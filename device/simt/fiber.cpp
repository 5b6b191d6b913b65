// simt internals: fiber stacks, the context switch (Boost.Context's fcontext, or ucontext), the guard-page SIGSEGV
// handler and the AddressSanitizer fiber annotations.
#include "device/simt/fiber.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "base/error.h"
#include "base/sanitizers.h"

#ifdef PB_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif


namespace parbench::simt::detail {

namespace {
// Large enough that a frame with a big local array still lands in it rather than past it.
constexpr std::size_t kGuardBytes = 64 * 1024;
constexpr std::size_t kAltStackBytes = 64 * 1024;

std::size_t page_size() {
  static const std::size_t p = std::size_t(sysconf(_SC_PAGESIZE));
  return p;
}
}  // namespace

FiberStack map_stack(std::size_t usable_bytes) {
  const std::size_t page = page_size();
  usable_bytes = (usable_bytes + page - 1) / page * page;
  FiberStack s;
  s.map_bytes = kGuardBytes + usable_bytes;
  void* m = mmap(nullptr, s.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    throw Error("simt: cannot map a " + std::to_string(usable_bytes) + "-byte fiber stack: " + std::strerror(errno) +
                " (lower PARBENCH_SIMT_STACK or the threads per block)");
  s.map = static_cast<char*>(m);
  if (mprotect(s.map, kGuardBytes, PROT_NONE) != 0) {
    munmap(m, s.map_bytes);
    throw Error(std::string("simt: cannot protect a fiber stack guard page: ") + std::strerror(errno));
  }
  s.lo = s.map + kGuardBytes;
  s.stale_lo = s.lo;  // the mapping may reuse addresses whose shadow an earlier stack left poisoned
  s.size = usable_bytes;
#ifdef PB_TSAN
  s.tsan_fiber = __tsan_create_fiber(0);
#endif
  return s;
}

void unmap_stack(FiberStack& s) {
#ifdef PB_TSAN
  if (s.tsan_fiber) __tsan_destroy_fiber(s.tsan_fiber);
#endif
  if (s.map) munmap(s.map, s.map_bytes);
  s = FiberStack{};
}

namespace {
#ifdef PARBENCH_SIMT_UCONTEXT
// makecontext passes int arguments only: the Context's address comes as two halves.
__attribute__((no_sanitize("thread"))) void fiber_start(unsigned hi, unsigned lo) {
  auto* self = reinterpret_cast<Context*>((std::uintptr_t(hi) << 32) | std::uintptr_t(lo));
  self->entry(self->arg);
  std::abort();
}
#else
namespace fctx = boost::context::detail;

// A fiber's first code, on its fresh stack: records the context that switched here (as switch_context does after
// its jump) and runs the entry. Not instrumented by TSan: it never returns, so the entry TSan recorded would stay
// on the fiber's shadow call stack, one more with every block that reuses the stack.
__attribute__((no_sanitize("thread"))) void fiber_start(fctx::transfer_t t) {
  auto* self = static_cast<Context*>(t.data);
  self->resumer->fctx = t.fctx;
  self->entry(self->arg);
  std::abort();
}
#endif
}  // namespace

void make_context(Context& c, const FiberStack& s, void (*entry)(void*), void* arg) {
#ifdef PARBENCH_SIMT_UCONTEXT
  if (getcontext(&c.uc) != 0) throw Error(std::string("simt: getcontext: ") + std::strerror(errno));
  c.uc.uc_stack.ss_sp = s.lo;
  c.uc.uc_stack.ss_size = s.size;
  c.uc.uc_link = nullptr;
  const auto p = reinterpret_cast<std::uintptr_t>(&c);
  makecontext(&c.uc, reinterpret_cast<void (*)()>(&fiber_start), 2, unsigned(p >> 32), unsigned(p & 0xffffffffu));
#else
  c.fctx = fctx::make_fcontext(s.lo + s.size, s.size, &fiber_start);
  c.resumer = nullptr;
#endif
  c.entry = entry;
  c.arg = arg;
}

GuardInfo& running_guard() {
  static thread_local GuardInfo g;
  return g;
}

namespace {
struct sigaction g_previous_segv;

void on_segv(int sig, siginfo_t* info, void* uctx) {
  const GuardInfo& g = running_guard();
  const char* addr = static_cast<const char*>(info->si_addr);
  if (g.guard_lo && addr >= g.guard_lo && addr < g.guard_hi) {
    char msg[640];
    int n = std::snprintf(msg, sizeof msg,
                          "simt: stack overflow in kernel %s, block (%u,%u,%u), thread (%u,%u,%u): the %zu-byte fiber "
                          "stack ran into its guard page (fault at %p). Raise PARBENCH_SIMT_STACK (e.g. 1M) or call "
                          "parbench::simt::set_stack_size().\n",
                          g.kernel ? g.kernel : "?", g.block[0], g.block[1], g.block[2], g.thread[0], g.thread[1],
                          g.thread[2], g.stack_bytes, static_cast<const void*>(addr));
    if (n > 0) (void)!write(2, msg, std::size_t(n) < sizeof msg ? std::size_t(n) : sizeof msg - 1);
    std::abort();
  }
  // Not ours: hand it to whoever was there before (a sanitizer, or the default action).
  if (g_previous_segv.sa_flags & SA_SIGINFO) {
    if (g_previous_segv.sa_sigaction) return g_previous_segv.sa_sigaction(sig, info, uctx);
  } else if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN) {
    return g_previous_segv.sa_handler(sig);
  }
  signal(SIGSEGV, SIG_DFL);  // returning re-executes the access, which now kills the process
}

struct AltStack {
  void* mem = nullptr;
  AltStack() {
    stack_t old{};
    if (sigaltstack(nullptr, &old) == 0 && !(old.ss_flags & SS_DISABLE)) return;  // keep the thread's own
    mem = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
      mem = nullptr;
      return;
    }
    stack_t st{};
    st.ss_sp = mem;
    st.ss_size = kAltStackBytes;
    if (sigaltstack(&st, nullptr) != 0) {
      munmap(mem, kAltStackBytes);
      mem = nullptr;
    }
  }
  ~AltStack() {
    if (!mem) return;
    stack_t st{};
    st.ss_flags = SS_DISABLE;
    sigaltstack(&st, nullptr);
    munmap(mem, kAltStackBytes);
  }
};
}  // namespace

void install_guard_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_sigaction = &on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
  });
  static thread_local AltStack alt;
  (void)alt;
}

#ifdef PB_ASAN
void asan_start_switch(void** fake_stack_save, const void* bottom, std::size_t size) {
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
}
void asan_finish_switch(void* fake_stack_save, const void** bottom_old, std::size_t* size_old) {
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
}
void asan_unpoison(const void* p, std::size_t bytes) { ASAN_UNPOISON_MEMORY_REGION(p, bytes); }
#else
void asan_start_switch(void**, const void*, std::size_t) {}
void asan_finish_switch(void*, const void**, std::size_t*) {}
void asan_unpoison(const void*, std::size_t) {}
#endif


}  // namespace parbench::simt::detail
