// The per-thread current stream behind CurrentStream guards.
#include "core/current_stream.h"

namespace parbench {

namespace {
thread_local void* t_current = nullptr;
}  // namespace

void* current_stream() { return t_current; }

CurrentStream::CurrentStream(void* native_stream) : previous_(t_current) { t_current = native_stream; }

CurrentStream::~CurrentStream() { t_current = previous_; }

}  // namespace parbench
