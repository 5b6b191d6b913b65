// Order between host threads that a checker of device work cannot see (the emulated GPU's stream-ordering hazard
// checker follows streams, events and host waits, not mutexes or atomics): publish(tag) in one thread, then
// receive(tag) in another, hands what the first has waited for on the GPUs to the second, as if the second had
// waited for it too. Both are no-ops until a checker installs itself.
#pragma once

namespace parbench::host_order {

using Hook = void (*)(const void* tag);
void install(Hook publish, Hook receive);
// Call publish before the store another thread reads to go on, and receive after that read.
void publish(const void* tag);
void receive(const void* tag);

}  // namespace parbench::host_order
