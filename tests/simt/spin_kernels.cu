// Kernels that spin on flags other threads, blocks or GPUs set: the progress the emulator promises (a spin loop
// with __nanosleep or clock64 lets the block's other threads run; same-index blocks of two co-resident kernels
// progress together) and deadlines that expire.
#include "device/cuda_compat.h"
#include "tests/simt/spin_kernels.h"

namespace parbench::PB_KERNEL_NS {

namespace {

__device__ unsigned load_acquire(unsigned* p) {
  const unsigned v = atomicAdd_system(p, 0u);
  __threadfence_system();
  return v;
}

// Waits until *p >= want; false when the deadline passed first.
__device__ bool wait_at_least(unsigned* p, unsigned want, long long deadline) {
  while (load_acquire(p) < want) {
    if (clock64() > deadline) return false;
    __nanosleep(100);
  }
  return true;
}

}  // namespace

__global__ void spin_in_block_kernel(int* out, long long timeout) {
  __shared__ volatile int flag;
  __shared__ volatile int value;
  if (threadIdx.x == 0) {
    flag = 0;
    value = 0;
  }
  __syncthreads();
  if (threadIdx.x == blockDim.x - 1) {
    value = 42;
    __threadfence_block();
    flag = 1;
  }
  if (threadIdx.x == 0) {
    const long long deadline = clock64() + timeout;
    int late = 0;
    while (flag == 0) {
      if (clock64() > deadline) {
        late = 1;
        break;
      }
      __nanosleep(100);
    }
    out[0] = value;
    out[1] = late;
  }
}
void spin_in_block(int* out, int block, long long timeout, void* stream) {
  PB_LAUNCH(spin_in_block_kernel, dim3(1), dim3(block), 0, stream)(out, timeout);
  PB_CHECK_LAUNCH();
}

__global__ void spin_until_deadline_kernel(long long* out, const unsigned* flag, long long timeout) {
  if (threadIdx.x != 0) return;
  const long long start = clock64();
  const bool set = wait_at_least(const_cast<unsigned*>(flag), 1u, start + timeout);
  out[0] = set ? 0 : 1;
  out[1] = clock64() - start;
}
void spin_until_deadline(long long* out, const unsigned* flag, long long timeout, void* stream) {
  PB_LAUNCH(spin_until_deadline_kernel, dim3(1), dim3(32), 0, stream)(out, flag, timeout);
  PB_CHECK_LAUNCH();
}

__global__ void ping_pong_kernel(unsigned* my_flags, int* my_data, unsigned* peer_flags, int* peer_data, int* err,
                                 int rounds, int role, long long timeout) {
  const unsigned b = blockIdx.x;
  if (threadIdx.x == 0) {
    const long long deadline = clock64() + timeout;
    int e = 0;
    for (unsigned t = 1; t <= 2u * unsigned(rounds) && e == 0; ++t) {
      const bool mine = (t % 2 == 1) == (role == 0);
      if (mine) {
        peer_data[b] = int(7 * t + b);
        __threadfence_system();
        atomicExch_system(&peer_flags[b], t);
      } else if (!wait_at_least(&my_flags[b], t, deadline)) {
        e = 1;
      } else if (*reinterpret_cast<volatile int*>(&my_data[b]) != int(7 * t + b)) {
        e = 2;
      }
    }
    err[b] = e;
  }
  __syncthreads();
}
void ping_pong(unsigned* my_flags, int* my_data, unsigned* peer_flags, int* peer_data, int* err, int rounds, int role,
               int blocks, long long timeout, void* stream) {
  PB_LAUNCH(ping_pong_kernel, dim3(blocks), dim3(64), 0, stream)(my_flags, my_data, peer_flags, peer_data, err,
                                                                  rounds, role, timeout);
  PB_CHECK_LAUNCH();
}

__global__ void write_pattern_kernel(int* dst, int n, int salt) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) dst[i] = 3 * i + salt;
}
void write_pattern(int* dst, int n, int salt, void* stream) {
  PB_LAUNCH(write_pattern_kernel, dim3((n + 127) / 128), dim3(128), 0, stream)(dst, n, salt);
  PB_CHECK_LAUNCH();
}

__global__ void publish_kernel(int* peer_data, unsigned* peer_flags, int value) {
  if (threadIdx.x != 0) return;
  peer_data[blockIdx.x] = value + int(blockIdx.x);
  __threadfence_system();
  atomicExch_system(&peer_flags[blockIdx.x], 1u);
}
void publish(int* peer_data, unsigned* peer_flags, int value, int blocks, void* stream) {
  PB_LAUNCH(publish_kernel, dim3(blocks), dim3(32), 0, stream)(peer_data, peer_flags, value);
  PB_CHECK_LAUNCH();
}

__global__ void consume_kernel(int* out, int* my_data, unsigned* my_flags, bool wait, long long delay,
                               long long timeout) {
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x;
  if (wait && !wait_at_least(&my_flags[b], 1u, clock64() + timeout)) {
    out[b] = -2;
    return;
  }
  for (const long long until = clock64() + (wait ? 0 : delay); clock64() < until;) __nanosleep(100);
  out[b] = *reinterpret_cast<volatile int*>(&my_data[b]);
}
void consume(int* out, int* my_data, unsigned* my_flags, bool wait, long long delay, int blocks, long long timeout,
             void* stream) {
  PB_LAUNCH(consume_kernel, dim3(blocks), dim3(32), 0, stream)(out, my_data, my_flags, wait, delay, timeout);
  PB_CHECK_LAUNCH();
}

__global__ void chain_kernel(unsigned* flags, int* err, long long timeout) {
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x;
  const bool ok = b + 1 == gridDim.x || wait_at_least(&flags[b + 1], 1u, clock64() + timeout);
  err[b] = ok ? 0 : 1;
  __threadfence_system();
  atomicExch_system(&flags[b], 1u);
}
void chain(unsigned* flags, int* err, int blocks, long long timeout, void* stream) {
  PB_LAUNCH(chain_kernel, dim3(blocks), dim3(32), 0, stream)(flags, err, timeout);
  PB_CHECK_LAUNCH();
}

}  // namespace parbench::PB_KERNEL_NS
