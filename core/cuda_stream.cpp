// CUDA streams and events (built only when CUDA is on).
#include <cuda_runtime.h>

#include "base/error.h"

namespace parbench::detail {

void* cuda_stream_create(int index) {
  CUDA_CHECK(cudaSetDevice(index));
  cudaStream_t s;
  // Non-blocking, as PyTorch's and Megatron's streams: no implicit order with the legacy default stream, which
  // a thread with a current stream never uses (device_memcpy, device_memset and collectives without a stream run
  // on that stream: synchronous_stream in core/stream.h), so a library's stray use of it cannot stall our work.
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
void cuda_stream_destroy(void* s) { cudaStreamDestroy(static_cast<cudaStream_t>(s)); }
void cuda_stream_sync(int index, void* s) {
  if (!s) CUDA_CHECK(cudaSetDevice(index));  // the default stream is the current GPU's
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
}
void* cuda_event_create(int index) {
  CUDA_CHECK(cudaSetDevice(index));
  cudaEvent_t e;
  CUDA_CHECK(cudaEventCreate(&e));
  return e;
}
void cuda_event_destroy(void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
void cuda_event_record(void* e, void* s) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
}
bool cuda_event_query(void* e) {
  const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
  if (r == cudaErrorNotReady) return false;
  CUDA_CHECK(r);
  return true;
}
void cuda_event_sync(void* e) { CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e))); }
void cuda_stream_wait_event(void* s, void* e) {
  CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s), static_cast<cudaEvent_t>(e), 0));
}
float cuda_event_elapsed_ms(void* start, void* end) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
  return ms;
}

}  // namespace parbench::detail
