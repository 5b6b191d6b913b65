// What the device-side collectives' kernels get from the symmetric memory (symmetric_memory.h): plain data, read
// by host code and kernels alike.
#pragma once

namespace parbench {

// Limits of the layer: the ranks of one node (an 8-GPU NVLink domain) and the blocks whose flags it keeps.
constexpr int kSymmMaxRanks = 8;
constexpr int kSymmMaxBlocks = 32;

// Written by a kernel block that gave up waiting for a peer (one record per block, in host memory the GPU writes):
// `missing` last, so a host that reads it non-zero sees the rest.
struct SymmFault {
  unsigned base;     // the operation's flag base (SymmPeers::base)
  unsigned phase;    // the flag value it waited for: base + phase
  unsigned missing;  // the rank that did not arrive, plus one; 0: none
  unsigned pad;
};

// One operation's view of the symmetric memory. Flags count up forever: operation k's phases write base + 1,
// base + 2, ... (bases grow by the phases each operation uses), so buffers and flags are reused without clearing,
// and a flag past the value waited for also means arrived. Every kernel starts with symm_op_begin, which takes the
// base from this rank's counters in device memory (`epochs`) and advances them itself: a kernel launched again with
// the same arguments, as a CUDA graph's replay is, still takes the next operation's flag values.
struct SymmPeers {
  void* const* buffers;      // device table: rank q's buffer
  unsigned* const* signals;  // device table: rank q's flags, [block][sender]: written by the senders, read by q
  SymmFault* faults;         // this rank's records, one per block
  unsigned* epochs;          // this rank's flag bases, one per block slot (kSymmMaxBlocks), equal between operations
  unsigned phases;           // flag values one operation uses: what symm_op_begin advances the bases by
  int rank, ranks;
  unsigned base;  // the host's count at issue; symm_op_begin replaces it with the operation's base
  unsigned long long timeout_ns;  // how long a block waits for a peer before it records a fault and exits
  int skip_ready_wait;            // test only (PARBENCH_TEST_SYMM_SKIP_WAIT): a planted race, never set otherwise
};

}  // namespace parbench
