// Launchers of kernels that spin on flags (tests/simt/spin_kernels.cu): within a block, until a deadline, and
// ping-pong through a peer GPU's memory. Built for simt and cuda; asynchronous on `stream` under cuda. Timeouts
// and waits are in clock64 ticks: nanoseconds on simt and the emulated GPU, cycles on a GPU.
#pragma once

#define PB_SPIN_LAUNCHERS                                                                                         \
  /* one block of `block` threads: thread 0 spins (__nanosleep, clock64 deadline) on a shared flag the last    \
     thread sets after writing a value. out[0] = the value thread 0 read (42), out[1] = 1 if the deadline passed */ \
  void spin_in_block(int* out, int block, long long timeout, void* stream);                                    \
  /* thread 0 spins on *flag (never set by the test) until timeout passed; out[0] = 1 when it gave up at the   \
     deadline, out[1] = the ticks it waited (clock64) */                                                     \
  void spin_until_deadline(long long* out, const unsigned* flag, long long timeout, void* stream);              \
  /* `blocks` blocks; block b's thread 0 passes tokens 1..2*rounds with the same block of a kernel on a peer GPU: \
     role 0 sends the odd tokens, role 1 the even ones. To send token t it writes peer_data[b] = 7t + b, then      \
     releases peer_flags[b] = t (system-scope atomic after __threadfence_system); to receive it waits until       \
     my_flags[b] >= t (acquire) and checks my_data[b]. err[b]: 0, 1 (deadline passed) or 2 (wrong data). */       \
  void ping_pong(unsigned* my_flags, int* my_data, unsigned* peer_flags, int* peer_data, int* err, int rounds,   \
                 int role, int blocks, long long timeout, void* stream);                                           \
  /* dst[i] = 3 * i + salt for i < n (dst may be a peer GPU's or another process's memory) */                       \
  void write_pattern(int* dst, int n, int salt, void* stream);                                                      \
  /* `blocks` blocks: block b writes peer_data[b] = value + b, then releases peer_flags[b] = 1 */                   \
  void publish(int* peer_data, unsigned* peer_flags, int value, int blocks, void* stream);                         \
  /* `blocks` blocks: block b waits until my_flags[b] is set (when `wait`; out[b] = -2 when the wait passed its    \
     deadline) or else only `delay` ticks, then out[b] = my_data[b] */                                              \
  void consume(int* out, int* my_data, unsigned* my_flags, bool wait, long long delay, int blocks, long long timeout, \
               void* stream);                                                                                       \
  /* `blocks` blocks: the last sets flags[last] = 1; every other block b waits for flags[b + 1], then sets          \
     flags[b] = 1 (so block 0 finishes only when every block ran at once). err[b] = 1 when its wait timed out */     \
  void chain(unsigned* flags, int* err, int blocks, long long timeout, void* stream);

namespace parbench::simt_kernels {
PB_SPIN_LAUNCHERS
}  // namespace parbench::simt_kernels
#ifdef PARBENCH_HAVE_CUDA
namespace parbench::cuda_kernels {
PB_SPIN_LAUNCHERS
}  // namespace parbench::cuda_kernels
#endif
