// Strict mode's self-test: a host thread reads device memory, which must stop the program with the allocation
// named (PARBENCH_EMU_STRICT=1); a device-to-host copy of the same memory first must work.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  float* dev = nullptr;
  if (cudaMalloc(&dev, 1000 * sizeof(float)) != cudaSuccess) return 2;
  float host[4] = {};
  if (cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  std::printf("copy ok\n");
  std::fflush(stdout);
  volatile float x = dev[10];  // the bug on purpose
  std::printf("read %f: not caught\n", double(x));
  return 0;
}
