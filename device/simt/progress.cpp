// simt internals: how spinning blocks make progress (co-residency, the pause of a block whose threads all wait on
// flags) and the interleaving fuzz that varies the order in which blocks of different kernels reach memory.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "device/simt/block.h"
#include "device/simt/simt_device.h"

namespace parbench::simt::detail {

namespace {

struct Fuzz {
  std::atomic<bool> on{false};
  std::atomic<unsigned long long> seed{0};
  std::atomic<unsigned> max_us{0};
  std::atomic<unsigned long long> draws{0};  // makes every OS thread's stream of draws distinct
};
Fuzz& fuzz() {
  static Fuzz f;
  return f;
}

// Fuzz draws: splitmix64 over a per-OS-thread state seeded from the fuzz seed.
unsigned long long draw() {
  static thread_local unsigned long long state = 0;
  static thread_local unsigned long long state_seed = ~0ull;
  Fuzz& f = fuzz();
  const unsigned long long seed = f.seed.load(std::memory_order_relaxed);
  if (state_seed != seed) {
    state_seed = seed;
    state = seed * 0x9e3779b97f4a7c15ull + f.draws.fetch_add(1) * 0xd1b54a32d192ed03ull;
  }
  unsigned long long z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The longest fuzz pause: short enough that a kernel of a few dozen spinning blocks stays fast.
constexpr unsigned kMaxFuzzPauseUs = 100;

void fuzz_sleep() {
  const unsigned max_us = std::min(fuzz().max_us.load(std::memory_order_relaxed), kMaxFuzzPauseUs);
  std::this_thread::sleep_for(std::chrono::microseconds(draw() % (max_us + 1ull)));
}

}  // namespace

bool co_resident(const LaunchSpec& spec) {
  const unsigned long long blocks = 1ull * spec.grid.x * spec.grid.y * spec.grid.z;
  const unsigned long long threads = blocks * spec.block.x * spec.block.y * spec.block.z;
  return blocks <= kResidentBlocks && threads <= kResidentThreads;
}

void set_interleave_fuzz(bool on, unsigned long long seed, unsigned max_us) {
  Fuzz& f = fuzz();
  f.seed = seed;
  f.max_us = max_us;
  f.on = on;
}

void pause_spinning_block(int idle_rounds) {
  if (fuzz().on.load(std::memory_order_relaxed) && draw() % 8 == 0) return fuzz_sleep();
  // A few rounds only give the core away; a block that keeps spinning sleeps a little, so that many spinning
  // blocks on few cores leave the one they wait for most of the CPU.
  if (idle_rounds < 64)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void fuzz_block_start(const LaunchState& launch, std::uint64_t) {
  if (!launch.resident || !fuzz().on.load(std::memory_order_relaxed)) return;
  if (draw() % 8 == 0) fuzz_sleep();  // rare enough that kernels of many small blocks stay fast
}

}  // namespace parbench::simt::detail

namespace parbench::simt {

namespace detail {
void spin_pause() {
  if (!yield_fiber()) std::this_thread::yield();
}
}  // namespace detail

long long clock64() {
  detail::yield_fiber();  // a deadline loop is a spin loop: let the block's other threads run
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace parbench::simt
