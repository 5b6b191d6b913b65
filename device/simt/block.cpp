// simt internals: one thread block on one OS thread. Each CUDA thread is a fiber that runs until it
// waits (barrier, warp collective) or exits; the scheduler resumes runnable fibers in the order the
// schedule gives, round after round, and reports a deadlock when a round finds none runnable.
#include "device/simt/block.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "device/simt/fiber.h"
#include "device/simt/simt_device.h"
#include "device/simt/simt_wmma.h"
#include "device/simt/warp_math.h"

namespace parbench::simt::detail {

namespace {

enum class State : std::uint8_t { ready, barrier, warp, done };

// More than fiber_main's own frame and the context switch it calls last ever take.
constexpr std::ptrdiff_t kLeftFrameBytes = 16 * 1024;

struct Fiber {
  Context ctx;
  FiberStack* stack;
  uint3 tid;
  int linear;
  State state;
  const char* file;  // where it waits
  int line;
  int barrier_result;
  WarpArgs warp;  // the warp collective it waits in
  std::uint64_t warp_result;
  void* asan_fake;
};

struct Warp {
  unsigned live = 0;     // lanes that have not exited
  unsigned waiting = 0;  // lanes waiting in a warp collective
};

// Per OS thread, reused across blocks and launches: mapping stacks is the expensive part.
struct Worker {
  std::vector<FiberStack> stacks;
  std::size_t stack_bytes = 0;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<int> order;
  std::vector<unsigned char> shared;
  ~Worker() {
    for (auto& s : stacks) unmap_stack(s);
  }
};
Worker& worker() {
  static thread_local Worker w;
  return w;
}

struct Block {
  const LaunchState* launch;
  uint3 idx;
  Fiber* fibers;
  int n;
  Warp* warps;
  int live;
  // the barrier being gathered
  int arrived = 0;
  const char* bar_file = nullptr;
  int bar_line = 0;
  BarrierKind bar_kind = BarrierKind::sync;
  int bar_count = 0, bar_all = 1, bar_any = 0;
  // the scheduler's own context
  Fiber* current = nullptr;
  Context sched;
  void* sched_fake = nullptr;
  void* sched_tsan = nullptr;  // ThreadSanitizer's fiber of the scheduler (the OS thread's own)
  const void* sched_bottom = nullptr;
  std::size_t sched_size = 0;
  std::exception_ptr error;
  bool yielded = false;  // the fiber that just returned to the scheduler did so from yield_fiber
  int idle_rounds = 0;   // consecutive rounds in which every thread that ran only yielded
};
thread_local Block* t_block = nullptr;

std::string triple(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}
std::string site(const char* file, int line) { return std::string(file ? file : "?") + ":" + std::to_string(line); }
std::string where(const Block& b) { return "kernel " + std::string(b.launch->spec->name) + ", block " + triple(b.idx); }

[[noreturn]] void fatal(const std::string& msg) {
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

Block& current_block(const char* what, const char* file, int line) {
  Block* b = t_block;
  if (!b || !b->current) fatal(std::string("simt: ") + what + " called outside a simt kernel, at " + site(file, line));
  return *b;
}

void resume(Block& b, Fiber& f) {
  b.current = &f;
  threadIdx = f.tid;
  GuardInfo& g = running_guard();
  g.guard_lo = f.stack->map;
  g.guard_hi = f.stack->lo;
  g.stack_bytes = f.stack->size;
  g.thread[0] = f.tid.x, g.thread[1] = f.tid.y, g.thread[2] = f.tid.z;
  asan_start_switch(&b.sched_fake, f.stack->lo, f.stack->size);
  tsan_switch_to(f.stack->tsan_fiber);
  switch_context(b.sched, f.ctx);
  asan_finish_switch(b.sched_fake, nullptr, nullptr);
  g.guard_lo = g.guard_hi = nullptr;
  b.current = nullptr;
}

void suspend(Block& b, Fiber& f) {
  asan_start_switch(&f.asan_fake, b.sched_bottom, b.sched_size);
  tsan_switch_to(b.sched_tsan);
  switch_context(f.ctx, b.sched);
  asan_finish_switch(f.asan_fake, &b.sched_bottom, &b.sched_size);
}

void release_barrier(Block& b) {
  int r = 0;
  switch (b.bar_kind) {
    case BarrierKind::sync: r = 0; break;
    case BarrierKind::count: r = b.bar_count; break;
    case BarrierKind::all: r = b.bar_all; break;
    case BarrierKind::any: r = b.bar_any; break;
  }
  for (int i = 0; i < b.n; ++i) {
    Fiber& f = b.fibers[i];
    if (f.state == State::barrier) f.state = State::ready, f.barrier_result = r;
  }
  b.arrived = 0;
}

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::shfl_idx: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync/__any_sync/__all_sync";
    case WarpOp::sync: return "__syncwarp";
    case WarpOp::match_any: return "__match_any_sync";
    case WarpOp::mma: return "wmma::mma_sync";
    default: return "__reduce_*_sync";
  }
}
bool is_shuffle(WarpOp op) {
  return op == WarpOp::shfl_idx || op == WarpOp::shfl_up || op == WarpOp::shfl_down || op == WarpOp::shfl_xor;
}

void mma(Block& b, Fiber* lanes, unsigned participants) {
  if (participants != 0xffffffffu)
    fatal("simt: wmma::mma_sync in " + where(b) + " at " + site(lanes[0].file, lanes[0].line) +
          " needs all 32 lanes of the warp; only lanes 0x" + [&] {
            char h[16];
            std::snprintf(h, sizeof h, "%08x", participants);
            return std::string(h);
          }() + " are live");
  MmaLane* l[32];
  for (int i = 0; i < 32; ++i) l[i] = static_cast<MmaLane*>(lanes[i].warp.data);
  const int m = l[0]->m, n = l[0]->n, k = l[0]->k;
  const int ea = m * k / 32, eb = k * n / 32, ec = m * n / 32;
  float a[512], bm[512], c[256];
  for (int i = 0; i < 32; ++i) {
    for (int e = 0; e < ea; ++e) a[i * ea + e] = l[i]->a[e];
    for (int e = 0; e < eb; ++e) bm[i * eb + e] = l[i]->b[e];
    for (int e = 0; e < ec; ++e) c[i * ec + e] = l[i]->c[e];
  }
  for (int r = 0; r < m; ++r)
    for (int col = 0; col < n; ++col) {
      float acc = c[r * n + col];
      for (int kk = 0; kk < k; ++kk) acc = std::fma(a[r * k + kk], bm[kk * n + col], acc);
      c[r * n + col] = acc;
    }
  for (int i = 0; i < 32; ++i)
    for (int e = 0; e < ec; ++e) l[i]->d[e] = c[i * ec + e];
}

// Computes every participant's result with CUDA's source-lane rules. A source lane outside the
// participants gives the lane its own value (undefined in CUDA).
void complete(Block& b, Fiber* lanes, unsigned req, WarpOp op) {
  auto each = [&](auto fn) {
    for (unsigned m = req; m; m &= m - 1) fn(__builtin_ctz(m));
  };
  if (is_shuffle(op)) {
    each([&](int i) {
      Fiber& g = lanes[i];
      const long src = shuffle_source(op, unsigned(i), unsigned(g.warp.width), g.warp.arg);
      g.warp_result = (src >= 0 && (req >> src & 1u)) ? lanes[src].warp.value : g.warp.value;
    });
    return;
  }
  switch (op) {
    case WarpOp::ballot: {
      unsigned bits = 0;
      each([&](int i) { bits |= (lanes[i].warp.value != 0 ? 1u : 0u) << i; });
      each([&](int i) { lanes[i].warp_result = bits | std::uint64_t(req) << 32; });
      break;
    }
    case WarpOp::sync: break;
    case WarpOp::match_any:
      each([&](int i) {
        unsigned same = 0;
        each([&](int j) { same |= (lanes[j].warp.value == lanes[i].warp.value ? 1u : 0u) << j; });
        lanes[i].warp_result = same;
      });
      break;
    case WarpOp::mma: mma(b, lanes, req); break;
    default: {  // the reductions, over the 32-bit values of the lanes in lane order
      auto u32 = [&](unsigned m) { return std::uint32_t(lanes[__builtin_ctz(m)].warp.value); };
      std::uint32_t r = u32(req);
      for (unsigned m = req & (req - 1); m; m &= m - 1) r = reduce_step(op, r, u32(m));
      each([&](int i) { lanes[i].warp_result = r; });
    }
  }
}

// Completes lane's collective when every live lane of its mask waits in the same op with the same mask.
bool try_complete(Block& b, int w, int lane) {
  Warp& wp = b.warps[w];
  Fiber* lanes = b.fibers + w * 32;
  const WarpArgs& a = lanes[lane].warp;
  const unsigned req = a.mask & wp.live;
  if ((req & wp.waiting) != req) return false;
  for (unsigned m = req; m; m &= m - 1) {
    const WarpArgs& o = lanes[__builtin_ctz(m)].warp;
    if (o.op != a.op || o.mask != a.mask) return false;
  }
  complete(b, lanes, req, a.op);
  for (unsigned m = req; m; m &= m - 1) lanes[__builtin_ctz(m)].state = State::ready;
  wp.waiting &= ~req;
  return true;
}

void thread_exit(Block& b, Fiber& f) {
  f.state = State::done;
  --b.live;
  const int w = f.linear / 32;
  Warp& wp = b.warps[w];
  wp.live &= ~(1u << (f.linear % 32));
  // Exited threads leave barriers and warp collectives: what waited for them may go on now.
  if (b.arrived > 0 && b.arrived == b.live) release_barrier(b);
  for (unsigned m = wp.waiting; m; m &= m - 1) {
    int lane = __builtin_ctz(m);
    if (wp.waiting >> lane & 1u) try_complete(b, w, lane);
  }
}

// Not instrumented by TSan: it never returns (its last switch leaves the fiber for good), so an entry TSan
// recorded would never be left and the fiber's shadow call stack would grow with every block that reuses it.
__attribute__((no_sanitize("thread"))) void fiber_main(void* p) {
  Fiber& f = *static_cast<Fiber*>(p);
  Block& b = *t_block;
  asan_finish_switch(nullptr, &b.sched_bottom, &b.sched_size);
  try {
    b.launch->body(b.launch->ctx);
  } catch (...) {
    if (!b.error) b.error = std::current_exception();
  }
  thread_exit(b, f);
  // Every frame the kernel entered has returned (a throw's frames were unpoisoned when it was thrown), so only
  // this frame and the switch below it stay poisoned: a margin below the frame pointer covers them.
  char* frame = static_cast<char*>(__builtin_frame_address(0));
  f.stack->stale_lo = frame - f.stack->lo > kLeftFrameBytes ? frame - kLeftFrameBytes : f.stack->lo;
  asan_start_switch(nullptr, b.sched_bottom, b.sched_size);
  tsan_switch_to(b.sched_tsan);
  switch_context(f.ctx, b.sched);
  std::abort();  // never resumed
}

std::string describe(const Fiber& f) {
  char mask[16];
  switch (f.state) {
    case State::barrier: return "waiting at __syncthreads at " + site(f.file, f.line);
    case State::warp:
      std::snprintf(mask, sizeof mask, "0x%08x", f.warp.mask);
      return std::string("waiting in ") + op_name(f.warp.op) + " (mask " + mask + ") at " + site(f.file, f.line);
    case State::ready: return "runnable";
    case State::done: return "exited";
  }
  return "?";
}

[[noreturn]] void deadlock(Block& b) {
  std::string msg = "simt: deadlock in " + where(b) + ": no thread of the block can continue (" +
                    std::to_string(b.live) + " live of " + std::to_string(b.n) + "). Waiting threads:\n";
  int lines = 0;
  for (int i = 0; i < b.n;) {
    std::string d = describe(b.fibers[i]);
    int j = i + 1;
    while (j < b.n && describe(b.fibers[j]) == d) ++j;
    if (b.fibers[i].state != State::done && lines++ < 40)
      msg += "  threads " + triple(b.fibers[i].tid) + ".." + triple(b.fibers[j - 1].tid) + " [" + std::to_string(i) +
             "-" + std::to_string(j - 1) + "]: " + d + "\n";
    i = j;
  }
  fatal(msg);
}

bool same_site(const char* f1, int l1, const char* f2, int l2) {
  return l1 == l2 && (f1 == f2 || (f1 && f2 && std::strcmp(f1, f2) == 0));
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Resumes every runnable thread once, in `wk.order`. A round in which every thread only yielded (all spin on flags)
// gives the OS thread away, and at the first such round asks the launch for another thread (co-residency).
void run_round(Block& b, Worker& wk) {
  bool ran = false, progressed = false;
  for (int i : wk.order) {
    Fiber& f = wk.fibers[std::size_t(i)];
    if (f.state != State::ready) continue;
    b.yielded = false;
    resume(b, f);
    ran = true;
    progressed |= !b.yielded;
  }
  if (!ran) deadlock(b);
  if (progressed) {
    b.idle_rounds = 0;
    return;
  }
  if (b.idle_rounds == 0 && b.launch->on_spin) b.launch->on_spin(b.launch->spin_ctx);
  pause_spinning_block(b.idle_rounds++);
}

}  // namespace

int block_barrier(BarrierKind kind, int pred, const char* file, int line) {
  Block& b = current_block("__syncthreads", file, line);
  Fiber& f = *b.current;
  if (b.arrived == 0) {
    b.bar_file = file, b.bar_line = line, b.bar_kind = kind;
    b.bar_count = 0, b.bar_all = 1, b.bar_any = 0;
  } else if (!same_site(b.bar_file, b.bar_line, file, line)) {
    const Fiber* other = nullptr;
    for (int i = 0; i < b.n && !other; ++i)
      if (b.fibers[i].state == State::barrier) other = &b.fibers[i];
    fatal("simt: divergent __syncthreads in " + where(b) + ": thread " + triple(f.tid) + " waits at " +
          site(file, line) + " while thread " + triple(other ? other->tid : uint3{}) + " waits at " +
          site(b.bar_file, b.bar_line) + " (" + std::to_string(b.arrived) + " of " + std::to_string(b.live) +
          " live threads arrived there). Every live thread of a block must reach the same __syncthreads.");
  }
  b.bar_count += pred != 0;
  b.bar_all &= pred != 0;
  b.bar_any |= pred != 0;
  f.state = State::barrier, f.file = file, f.line = line;
  if (++b.arrived == b.live)
    release_barrier(b);  // the last to arrive goes on at once
  else
    suspend(b, f);
  return f.barrier_result;
}

std::uint64_t warp_collective(const WarpArgs& a, const char* file, int line) {
  Block& b = current_block("a warp collective", file, line);
  Fiber& f = *b.current;
  const int w = f.linear / 32, lane = f.linear % 32;
  if (!(a.mask >> lane & 1u)) {
    char m[16];
    std::snprintf(m, sizeof m, "0x%08x", a.mask);
    fatal(std::string("simt: ") + op_name(a.op) + " at " + site(file, line) + " in " + where(b) + ": lane " +
          std::to_string(lane) + " (thread " + triple(f.tid) + ") is not in its own mask " + m);
  }
  if (is_shuffle(a.op) && (a.width < 1 || a.width > 32 || (a.width & (a.width - 1))))
    fatal(std::string("simt: ") + op_name(a.op) + " at " + site(file, line) + " in " + where(b) + ": width " +
          std::to_string(a.width) + " is not a power of two in 1..32");
  f.warp = a, f.file = file, f.line = line, f.state = State::warp;
  b.warps[w].waiting |= 1u << lane;
  if (!try_complete(b, w, lane)) suspend(b, f);
  return f.warp_result;
}

bool yield_fiber() {
  Block* b = t_block;
  if (!b || !b->current) return false;
  b->yielded = true;
  suspend(*b, *b->current);  // stays ready: the scheduler resumes it in the next round
  return true;
}

unsigned live_lanes_of_warp() {
  Block& b = current_block("__activemask", __FILE__, __LINE__);
  return b.warps[b.current->linear / 32].live;
}

void run_block(const LaunchState& launch, std::uint64_t block_linear) {
  const LaunchSpec& s = *launch.spec;
  if (t_block)
    throw Error("simt: kernel " + std::string(s.name) + " launched from inside kernel " +
                t_block->launch->spec->name + "; dynamic parallelism is not emulated");
  Worker& wk = worker();
  const int n = int(s.block.x * s.block.y * s.block.z);
  if (wk.stack_bytes != launch.stack_bytes) {
    for (auto& st : wk.stacks) unmap_stack(st);
    wk.stacks.clear();
    wk.stack_bytes = launch.stack_bytes;
  }
  while (wk.stacks.size() < std::size_t(n)) wk.stacks.push_back(map_stack(launch.stack_bytes));
  wk.fibers.resize(std::size_t(n));
  wk.warps.assign(std::size_t((n + 31) / 32), Warp{});
  wk.order.resize(std::size_t(n));

  Block b;
  b.launch = &launch;
  b.sched_tsan = tsan_current_fiber();
  b.idx = uint3{unsigned(block_linear % s.grid.x), unsigned(block_linear / s.grid.x % s.grid.y),
                unsigned(block_linear / (std::uint64_t(s.grid.x) * s.grid.y))};
  b.fibers = wk.fibers.data();
  b.n = n;
  b.warps = wk.warps.data();
  b.live = n;

  // Dynamic shared memory: 128-byte aligned, poisoned with 0xff (NaN for floats) so reads of
  // unwritten elements show.
  const std::size_t align = 128;
  if (wk.shared.size() < s.shared_bytes + align) wk.shared.resize(s.shared_bytes + align);
  auto base = reinterpret_cast<std::uintptr_t>(wk.shared.data());
  void* smem = reinterpret_cast<void*>((base + align - 1) & ~(align - 1));
  std::memset(smem, 0xff, s.shared_bytes);

  for (int i = 0; i < n; ++i) {
    Fiber& f = wk.fibers[std::size_t(i)];
    f = Fiber{};
    f.stack = &wk.stacks[std::size_t(i)];
    f.tid = uint3{unsigned(i) % s.block.x, unsigned(i) / s.block.x % s.block.y, unsigned(i) / (s.block.x * s.block.y)};
    f.linear = i;
    f.state = State::ready;
    // Frames a previous fiber left behind; until this fiber ends normally, assume it may leave them anywhere.
    asan_unpoison(f.stack->stale_lo, std::size_t(f.stack->lo + f.stack->size - f.stack->stale_lo));
    f.stack->stale_lo = f.stack->lo;
    make_context(f.ctx, *f.stack, &fiber_main, &f);
    wk.warps[std::size_t(i / 32)].live |= 1u << (i % 32);
  }
  const bool reverse = launch.schedule.kind == ScheduleKind::reverse;
  for (int i = 0; i < n; ++i) wk.order[std::size_t(i)] = reverse ? n - 1 - i : i;
  std::uint64_t rng = launch.schedule.seed ^ (block_linear * 0xd1b54a32d192ed03ull);

  GuardInfo& g = running_guard();
  g.kernel = s.name;
  g.block[0] = b.idx.x, g.block[1] = b.idx.y, g.block[2] = b.idx.z;
  blockIdx = b.idx;
  blockDim = s.block;
  gridDim = s.grid;
  dynamic_shared_memory = smem;
  fuzz_block_start(launch, block_linear);
  t_block = &b;
  while (b.live > 0) {
    if (launch.schedule.kind == ScheduleKind::random)
      for (int i = n - 1; i > 0; --i) std::swap(wk.order[std::size_t(i)], wk.order[splitmix(rng) % std::uint64_t(i + 1)]);
    run_round(b, wk);
  }
  t_block = nullptr;
  dynamic_shared_memory = nullptr;
  if (b.error) std::rethrow_exception(b.error);
}

}  // namespace parbench::simt::detail
