// The stream-timing fuzz's self-test: copies device data to pinned memory asynchronously and checks it on the
// host, with the stream synchronisation (--sync) or without it (a bug on purpose). Exit 1 when a check saw
// stale data; the emulated GPU must make the bug fail under most PARBENCH_EMU_DELAY seeds.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const bool sync = argc > 1 && std::strcmp(argv[1], "--sync") == 0;
  if (argc > 1 && std::strcmp(argv[1], "--have-guards") == 0) {
    // Whether the emulator can guard pinned memory here: it needs a memory protection key (PKU, and a kernel that
    // offers it), as the one this probe takes and gives back.
    const int key = ::pkey_alloc(0, 0);
    if (key < 0) {
      std::printf("no memory protection keys here (pkey_alloc failed): pinned memory is not guarded\n");
      return 0;
    }
    ::pkey_free(key);
    return 1;
  }
  const int bytes = 1 << 16, trials = 50;
  cudaStream_t s;
  unsigned char *dev = nullptr, *pinned = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess || cudaMalloc(&dev, bytes) != cudaSuccess ||
      cudaMallocHost(&pinned, bytes) != cudaSuccess)
    return 2;
  int stale = 0;
  for (int t = 0; t < trials; ++t) {
    const unsigned char value = static_cast<unsigned char>(t + 1);
    cudaMemsetAsync(dev, value, bytes, s);
    cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, s);
    if (sync) cudaStreamSynchronize(s);
    for (int i = 0; i < bytes; ++i)
      if (pinned[i] != value) {
        ++stale;
        break;
      }
    cudaStreamSynchronize(s);  // the next trial starts clean either way
  }
  std::printf("%s: %d of %d trials read stale data\n", sync ? "with the synchronisation" : "without it", stale, trials);
  cudaFree(dev);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  return stale == 0 ? 0 : 1;
}
