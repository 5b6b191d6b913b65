// Child process of the NVTX test: emits known ranges (values from the command line) so that the
// test tool loaded through NVTX_INJECTION64_PATH logs them. Exit 3 when NVTX is not active.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "profiles/range.h"

using namespace parbench;

static void unpack(std::int64_t stage) { PB_FUNCTION_RANGE(Category::compute, {.stage = stage}); }

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s LAYER MICROBATCH BYTES\n", argv[0]);
    return 2;
  }
  const std::int64_t layer = std::atoll(argv[1]), mb = std::atoll(argv[2]),
                     bytes = std::atoll(argv[3]);
  if (!TraceRecorder::instance().nvtx_active()) return 3;
  {
    TraceTrack track(0, "compute");
    PB_RANGE("step", Category::compute, {.stage = 1});
    { PB_RANGE("forward", Category::compute, {.layer = layer, .microbatch = mb}); }
    { PB_RANGE("allreduce", Category::communication, {.bytes = bytes}); }
    { PB_RANGE("adam", Category::optimizer); }
    { Range wait("wait", Category::idle, {.chunk = 0}); }
  }
  std::thread comm([&] {
    TraceTrack track(1, "comm");
    PB_RANGE("recv", Category::communication, {.stage = 2, .bytes = bytes + 1});
    unpack(2);
  });
  comm.join();
  return 0;
}
