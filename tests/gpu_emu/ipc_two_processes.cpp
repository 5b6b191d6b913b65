// CUDA IPC between two processes on the emulated GPUs (forked, handles through pipes; or the two ranks of
// `mpirun -np 2`, handles through MPI): the peer writes an exporter's allocation through the opened pointer with a
// kernel and the exporter reads back the exact values; a handle opened twice gives one pointer; a freed
// allocation's handle, a closed mapping and a second close are refused; a close under a queued kernel is a reported
// hazard; and the two processes' kernels pass 2000 tokens through each other's memory. Exits 0 when every check
// held.
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/emu/gpu_emu.h"
#include "tests/simt/spin_kernels.h"

#ifdef PARBENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace k = parbench::cuda_kernels;

namespace {

int g_failures = 0;
int g_rank = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "process %d: FAILED: %s\n", g_rank, what.c_str());
  ++g_failures;
}
void check_cuda(cudaError_t got, cudaError_t want, const std::string& what) {
  check(got == want, what + ": got " + cudaGetErrorName(got) + " (" + cudaGetErrorString(got) + "), want " +
                         cudaGetErrorName(want));
  cudaGetLastError();
}

// The other process: through pipes (fds >= 0) or, under mpirun, MPI.
struct Pipes {
  int to_peer, from_peer;
  void send_bytes(const void* p, std::size_t n) const {
#ifdef PARBENCH_HAVE_MPI
    if (to_peer < 0) {
      MPI_Send(p, int(n), MPI_BYTE, 1 - g_rank, 0, MPI_COMM_WORLD);
      return;
    }
#endif
    if (::write(to_peer, p, n) != ssize_t(n)) std::abort();
  }
  void receive_bytes(void* p, std::size_t n) const {
#ifdef PARBENCH_HAVE_MPI
    if (from_peer < 0) {
      MPI_Recv(p, int(n), MPI_BYTE, 1 - g_rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      return;
    }
#endif
    for (std::size_t got = 0; got < n;) {
      const ssize_t r = ::read(from_peer, static_cast<char*>(p) + got, n - got);
      if (r <= 0) std::abort();  // the peer died
      got += std::size_t(r);
    }
  }
  template <class T>
  void send(const T& v) const {
    send_bytes(&v, sizeof v);
  }
  template <class T>
  T receive() const {
    T v;
    receive_bytes(&v, sizeof v);
    return v;
  }
};

void* malloc_filled(std::size_t bytes, int byte) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, bytes), cudaSuccess, "cudaMalloc");
  check_cuda(cudaMemset(p, byte, bytes), cudaSuccess, "cudaMemset");
  // cudaMemset of device memory may return before it ran: the peer must not write before the fill lands.
  check_cuda(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  return p;
}
cudaIpcMemHandle_t handle_of(void* p) {
  cudaIpcMemHandle_t h;
  check_cuda(cudaIpcGetMemHandle(&h, p), cudaSuccess, "cudaIpcGetMemHandle");
  return h;
}

// Rank 1 writes rank 0's buffer through the opened pointer; rank 0 reads it back.
void write_through_handle(const Pipes& io, cudaStream_t s) {
  constexpr int kN = 1000;
  if (g_rank == 0) {
    int* buf = static_cast<int*>(malloc_filled(kN * sizeof(int), 0));
    io.send(handle_of(buf + 7));  // a pointer inside the allocation names all of it
    check(io.receive<int>() == 1, "the peer wrote");
    std::vector<int> v(kN);
    check_cuda(cudaMemcpy(v.data(), buf, kN * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess, "read back");
    int wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += v[i] != 3 * i + 11;
    check(wrong == 0, std::to_string(wrong) + " of " + std::to_string(kN) + " values differ from 3i + 11");
    cudaFree(buf);
    return;
  }
  const auto h = io.receive<cudaIpcMemHandle_t>();
  void *p = nullptr, *again = nullptr;
  check_cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), cudaSuccess, "cudaIpcOpenMemHandle");
  check_cuda(cudaIpcOpenMemHandle(&again, h, cudaIpcMemLazyEnablePeerAccess), cudaSuccess, "second open");
  check(p != nullptr && again == p, "a handle opened twice gives the same pointer");
  cudaPointerAttributes attr{};
  check_cuda(cudaPointerGetAttributes(&attr, p), cudaSuccess, "cudaPointerGetAttributes");
  check(attr.type == cudaMemoryTypeDevice && attr.device == 1, "the mapping is device memory of the opening GPU");
  k::write_pattern(static_cast<int*>(p), kN, 11, s);
  check_cuda(cudaStreamSynchronize(s), cudaSuccess, "the kernel writing through the opened pointer");
  io.send(1);
  check_cuda(cudaIpcCloseMemHandle(p), cudaSuccess, "first close");
  check_cuda(cudaIpcCloseMemHandle(p), cudaSuccess, "second close (the second open's reference)");
  check_cuda(cudaIpcCloseMemHandle(p), cudaErrorInvalidValue, "a third close");
  int x = 0;
  check_cuda(cudaMemcpy(&x, p, sizeof x, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
             "a copy from a closed mapping");
}

// Unmapping the peer's buffer while a kernel writing it is still queued is a hazard (a GPU faults on memory
// unmapped under its work), reported whatever the kernel's progress; after a wait, the same close is not.
void close_under_a_kernel(const Pipes& io, cudaStream_t s) {
  constexpr int kN = 256;
  if (g_rank == 0) {
    void* buf = malloc_filled(kN * sizeof(int), 0);
    io.send(handle_of(buf));
    check(io.receive<int>() == 3, "the peer closed its mappings");
    cudaFree(buf);
    return;
  }
  namespace emu = parbench::gpu_emu;
  emu::set_hazard_mode(emu::HazardMode::report);
  emu::take_hazard_reports();
  const auto h = io.receive<cudaIpcMemHandle_t>();
  for (bool waited : {false, true}) {
    void* p = nullptr;
    check_cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), cudaSuccess, "cudaIpcOpenMemHandle");
    k::write_pattern(static_cast<int*>(p), kN, 5, s);
    if (waited) check_cuda(cudaStreamSynchronize(s), cudaSuccess, "the kernel writing through the mapping");
    check_cuda(cudaIpcCloseMemHandle(p), cudaSuccess, "the close");
    const std::vector<std::string> reports = emu::take_hazard_reports();
    if (waited) {
      check(reports.empty(), "a close after the wait reported: " + (reports.empty() ? "" : reports[0]));
    } else {
      const bool named = reports.size() == 1 && reports[0].find("cudaIpcCloseMemHandle") != std::string::npos &&
                         reports[0].find("unmaps") != std::string::npos &&
                         reports[0].find("write_pattern") != std::string::npos;
      check(named, "the close under the kernel: " + std::to_string(reports.size()) + " report(s)" +
                       (reports.empty() ? "" : ": " + reports[0]));
    }
  }
  emu::set_hazard_mode(emu::HazardMode::abort);
  io.send(3);
}

// A handle of an allocation the exporter freed is refused.
void freed_handle(const Pipes& io) {
  if (g_rank == 0) {
    void* buf = malloc_filled(256, 0);
    const auto h = handle_of(buf);
    cudaFree(buf);
    io.send(h);
    return;
  }
  const auto h = io.receive<cudaIpcMemHandle_t>();
  void* p = nullptr;
  check_cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), cudaErrorMapBufferObjectFailed,
             "opening the handle of a freed allocation");
}

// Each process opens the other's flags and data and the kernels ping-pong 1000 times per block.
void ping_pong(const Pipes& io, cudaStream_t s) {
  constexpr int kBlocks = 4, kRounds = 1000;
  auto* flags = static_cast<unsigned*>(malloc_filled(kBlocks * sizeof(unsigned), 0));
  auto* data = static_cast<int*>(malloc_filled(kBlocks * sizeof(int), 0xff));
  auto* err = static_cast<int*>(malloc_filled(kBlocks * sizeof(int), 0xff));
  io.send(handle_of(flags));
  io.send(handle_of(data));
  void *peer_flags = nullptr, *peer_data = nullptr;
  check_cuda(cudaIpcOpenMemHandle(&peer_flags, io.receive<cudaIpcMemHandle_t>(), cudaIpcMemLazyEnablePeerAccess),
             cudaSuccess, "open the peer's flags");
  check_cuda(cudaIpcOpenMemHandle(&peer_data, io.receive<cudaIpcMemHandle_t>(), cudaIpcMemLazyEnablePeerAccess),
             cudaSuccess, "open the peer's data");
  k::ping_pong(flags, data, static_cast<unsigned*>(peer_flags), static_cast<int*>(peer_data), err, kRounds, g_rank,
               kBlocks, 60ll * 1000000000, s);
  check_cuda(cudaStreamSynchronize(s), cudaSuccess, "the ping-pong kernel");
  std::vector<int> e(kBlocks), x(kBlocks);
  std::vector<unsigned> f(kBlocks);
  cudaMemcpy(e.data(), err, kBlocks * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(f.data(), flags, kBlocks * sizeof(unsigned), cudaMemcpyDeviceToHost);
  cudaMemcpy(x.data(), data, kBlocks * sizeof(int), cudaMemcpyDeviceToHost);
  const unsigned last = unsigned(2 * kRounds - g_rank);  // the last token this side received
  for (int b = 0; b < kBlocks; ++b) {
    const std::string at = "block " + std::to_string(b) + ": ";
    check(e[b] == 0, at + "error code " + std::to_string(e[b]) + " (1: deadline, 2: wrong data)");
    check(f[b] == last, at + "last token " + std::to_string(f[b]) + ", want " + std::to_string(last));
    check(x[b] == int(7 * last + unsigned(b)), at + "data " + std::to_string(x[b]));
  }
  io.send(2);  // the peer may unmap only after both kernels finished
  check(io.receive<int>() == 2, "the peer finished");
  check_cuda(cudaIpcCloseMemHandle(peer_flags), cudaSuccess, "close the peer's flags");
  check_cuda(cudaIpcCloseMemHandle(peer_data), cudaSuccess, "close the peer's data");
}

int run(const Pipes& io) {
  check_cuda(cudaSetDevice(g_rank), cudaSuccess, "cudaSetDevice");
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  write_through_handle(io, s);
  freed_handle(io);
  close_under_a_kernel(io, s);
  ping_pong(io, s);
  cudaStreamDestroy(s);
  if (g_failures == 0) std::printf("process %d: every IPC check passed\n", g_rank);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef PARBENCH_HAVE_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {  // under mpirun: the two ranks are the two processes
    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
      std::fprintf(stderr, "run it with mpirun -np 2 (got %d ranks)\n", size);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int rc = run(Pipes{-1, -1});
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
  }
#endif
  (void)argc, (void)argv;
  int down[2], up[2];  // parent to child, child to parent
  if (::pipe(down) != 0 || ::pipe(up) != 0) return 1;
  // Forked before any CUDA call: each process starts its own emulated GPUs.
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    g_rank = 1;
    std::exit(run(Pipes{up[1], down[0]}));
  }
  const int mine = run(Pipes{down[1], up[0]});
  int status = 0;
  ::waitpid(child, &status, 0);
  const bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!child_ok) std::fprintf(stderr, "process 1 failed (wait status %d)\n", status);
  return mine == 0 && child_ok ? 0 : 1;
}
