// simt internals: fiber stacks with guard pages, the context switch (Boost.Context's fcontext; POSIX ucontext
// where the build found no Boost.Context: a signal-mask system call per switch, so slower), and the SIGSEGV handler
// that turns a guard-page hit into a clear stack-overflow message.
#pragma once
#include <cstddef>
#ifdef PARBENCH_SIMT_UCONTEXT
#include <ucontext.h>
#else
#include <boost/context/detail/fcontext.hpp>
#endif

#include "base/sanitizers.h"
#ifdef PB_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace parbench::simt::detail {

// An mmap'ed stack: [guard (PROT_NONE)][usable]. Stacks grow down into the guard.
struct FiberStack {
  char* map = nullptr;  // start of the mapping (the guard)
  std::size_t map_bytes = 0;
  char* lo = nullptr;   // lowest usable byte
  std::size_t size = 0;  // usable bytes
  void* tsan_fiber = nullptr;  // ThreadSanitizer's fiber for the code that runs on this stack (null without TSan)
  // The lowest byte whose AddressSanitizer shadow may still be poisoned by frames that never returned. A fiber
  // that ends normally leaves only its entry frames behind, near the top; one abandoned mid-kernel (a deadlock,
  // a fault in another fiber) may leave frames anywhere. Unpoisoning only [stale_lo, lo + size) before the
  // stack's next use keeps a 256 KiB stack from costing a 32 KiB shadow write per fiber per block.
  char* stale_lo = nullptr;
};
FiberStack map_stack(std::size_t usable_bytes);
void unmap_stack(FiberStack& s);

// A suspended context. Boost's fcontext switch saves the callee-saved registers, MXCSR and the x87 control word;
// the sanitizer annotations around a switch are the caller's (asan_*, tsan_* below), since Boost's own fiber
// types annotate for neither with fcontext.
struct Context {
#ifdef PARBENCH_SIMT_UCONTEXT
  // glibc's x86-64 ucontext_t points into itself: made in place and never moved (a block's fibers live in a
  // vector sized before any is made).
  ucontext_t uc{};
#else
  boost::context::detail::fcontext_t fctx = nullptr;
#endif
  void (*entry)(void*) = nullptr;  // what a fiber runs when first switched to
  void* arg = nullptr;
#ifndef PARBENCH_SIMT_UCONTEXT
  Context* resumer = nullptr;  // the context that last switched to this one: where the switch saves it
#endif
};
// Prepares `c` to run entry(arg) on `s` when first switched to. entry must never return.
void make_context(Context& c, const FiberStack& s, void (*entry)(void*), void* arg);
// Saves the running context into `from` and resumes `to`. jump_fcontext hands the resumed side the context it
// left; the side that switched to `from` stored its own Context in from.resumer, so that is where the left
// context belongs. Not instrumented by TSan: the caller has told TSan of the switch already, so the entry would be
// recorded on the fiber resumed and the exit, when this one resumes, on this one; a fiber's first run and last
// switch would leave them unbalanced.
__attribute__((no_sanitize("thread"))) inline void switch_context(Context& from, Context& to) {
#ifdef PARBENCH_SIMT_UCONTEXT
  swapcontext(&from.uc, &to.uc);  // saves into `from` itself: nothing to hand back
#else
  to.resumer = &from;
  const boost::context::detail::transfer_t t = boost::context::detail::jump_fcontext(to.fctx, &to);
  from.resumer->fctx = t.fctx;
#endif
}

// What the stack-overflow message names. The scheduler points this at the running fiber's.
struct GuardInfo {
  const char* guard_lo = nullptr;
  const char* guard_hi = nullptr;
  std::size_t stack_bytes = 0;
  const char* kernel = nullptr;
  unsigned block[3] = {0, 0, 0};
  unsigned thread[3] = {0, 0, 0};
};
GuardInfo& running_guard();  // this OS thread's
// Installs the process's SIGSEGV handler once and an alternate signal stack on this OS thread
// (unless it already has one).
void install_guard_handler();

// AddressSanitizer must be told about every stack switch (no-ops without ASan).
void asan_start_switch(void** fake_stack_save, const void* bottom, std::size_t size);
void asan_finish_switch(void* fake_stack_save, const void** bottom_old, std::size_t* size_old);
void asan_unpoison(const void* p, std::size_t bytes);

// ThreadSanitizer must be told about them too, or it takes the fibers of one OS thread for one thread whose stack
// jumps about (no-ops without TSan): the fiber of the code running now, and the switch to another, made right
// before the context switch. Always inlined: a function of its own would be entered on one fiber and left on
// another, unbalancing TSan's shadow call stacks. Flag 0: the switch orders the two fibers (they alternate on one
// OS thread). Fibers are made and destroyed with their stacks (map_stack, unmap_stack).
#ifdef PB_TSAN
inline void* tsan_current_fiber() { return __tsan_get_current_fiber(); }
__attribute__((always_inline)) inline void tsan_switch_to(void* fiber) { __tsan_switch_to_fiber(fiber, 0); }
#else
inline void* tsan_current_fiber() { return nullptr; }
inline void tsan_switch_to(void*) {}
#endif

}  // namespace parbench::simt::detail
