// The calling thread's current stream for GPU allocation, as PyTorch's current stream: a block the caching pool
// hands out belongs to the stream that was current when it was asked for. Host code only.
#pragma once

namespace parbench {

// The calling thread's current stream (a cudaStream_t); nullptr, the legacy default stream, unless a
// CurrentStream guard in scope says otherwise.
void* current_stream();

// Makes `native_stream` (a cudaStream_t; nullptr: the legacy default stream) the calling thread's current stream
// until the guard goes out of scope, which restores the one before: guards nest.
class CurrentStream {
 public:
  explicit CurrentStream(void* native_stream);
  ~CurrentStream();
  CurrentStream(const CurrentStream&) = delete;
  CurrentStream& operator=(const CurrentStream&) = delete;

 private:
  void* previous_;
};

}  // namespace parbench
