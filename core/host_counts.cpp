// Per-thread host counters (core/host_counts.h).
#include "core/host_counts.h"

namespace parbench {

HostCounts& host_counts() {
  thread_local HostCounts counts;
  return counts;
}

}  // namespace parbench
