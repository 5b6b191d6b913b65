// The stream-ordering hazard checker: which operations CUDA orders before which (vector clocks over streams and
// host threads, joined by stream order, event and stream waits, the legacy stream's implicit order and host
// waits), and the memory each queued operation touches, checked when it is queued against the earlier
// operations that touched the same bytes. A conflict nothing orders is reported whatever the timing, since no
// operation's progress enters the check (PARBENCH_EMU_HAZARDS, README.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace parbench::gpu_emu {

struct Allocation;  // emu.h

// One timeline's count of operations per timeline; an operation A happens before B when B's clock has at least
// A's tick in A's timeline.
using VClock = std::vector<std::uint32_t>;
void join(VClock& into, const VClock& from);

// Bytes an operation reads or writes (a write may read as well). `role` names the operand in a report
// ("pointer argument 2", "the receive buffer", "the destination").
struct MemAccess {
  const void* p = nullptr;
  std::size_t bytes = 0;
  bool write = false;
  std::string role;
};

// Who queued an operation, for the reports of both sides of a conflict.
struct OpWho {
  std::string what;  // the operation, as the stream shows it (with the call site where known)
  int device = 0;
  std::uint64_t stream = 0;
  bool legacy = false;
};

// A new timeline's index (a stream's, or a host thread's); the scheduler's mutex held.
int new_timeline();
// The calling host thread's clock (made on first use from every host thread's clock so far: a thread starts
// after what made it); the scheduler's mutex held.
VClock& host_clock();
// The calling host thread has seen `c` happen: a wait or a successful query; the scheduler's mutex held.
void host_observes(const VClock& c);

// Whether the checker is on (PARBENCH_EMU_HAZARDS other than off, or set_hazard_mode): without it an operation's
// accesses need not be described at all.
bool hazards_checked();
// Checks `accesses` of the operation `who` on timeline `timeline` with clock `clock` against the earlier accesses
// of the same bytes and records them; a conflict is reported as PARBENCH_EMU_HAZARDS says (by default: printed,
// then abort). The scheduler's mutex held.
void check_accesses(const std::shared_ptr<const OpWho>& who, int timeline, const VClock& clock,
                    const std::vector<MemAccess>& accesses);
// An allocation is gone: its accesses are forgotten.
void forget_accesses(std::uint64_t allocation_serial);
// The calling host thread is about to unmap `a` (`what` names the call and its site): every queued operation that
// touches it must be ordered before this thread by a host wait, since a GPU faults on memory unmapped under its
// work and CUDA does not promise that unmapping waits. Takes the scheduler's mutex.
void check_unmap(const Allocation& a, const std::string& what);
// Pinned host memory that queued device work writes (or reads) is guarded with a memory protection key until a
// host wait orders a host thread after that work: a host thread's access before is a fault, which
// pinned_guard_fault judges (a read of a write, or a write, is a hazard; anything else passes) and lets through.
// init_pinned_guards allocates the key (before any stream's thread starts); -1 from pinned_guard_key() means none
// (no memory protection keys, or PARBENCH_EMU_HAZARDS=off). Device threads enable the key for themselves.
void init_pinned_guards();
int pinned_guard_key();
bool pinned_guard_fault(void* address, bool write);

// The largest extent the calling thread's op declared for a tensor starting at `p` (gpu_emu.h: declare_operand);
// 0 when none did.
std::size_t declared_extent(const void* p);

}  // namespace parbench::gpu_emu
