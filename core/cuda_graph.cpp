// StreamGraph (graph.h) on the CUDA runtime.
#include "core/graph.h"

#include "base/error.h"

#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>

namespace parbench {

StreamGraph::StreamGraph(void* stream) : stream_(stream) {
  if (!stream) throw UsageError("a CUDA graph captures a created stream; the legacy default stream cannot capture");
  CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

StreamGraph::~StreamGraph() {
  if (capturing_) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(static_cast<cudaStream_t>(stream_), &partial) == cudaSuccess && partial)
      (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();
  }
  if (exec_) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) (void)cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}

void StreamGraph::end() {
  cudaGraph_t g = nullptr;
  capturing_ = false;
  CUDA_CHECK(cudaStreamEndCapture(static_cast<cudaStream_t>(stream_), &g));
  graph_ = g;
  cudaGraphExec_t e = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
  exec_ = e;
}

void StreamGraph::launch() {
  CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream_)));
}

}  // namespace parbench

#else

namespace parbench {
StreamGraph::StreamGraph(void* stream) : stream_(stream) { throw Error("CUDA graphs need a build with CUDA"); }
StreamGraph::~StreamGraph() = default;
void StreamGraph::end() {}
void StreamGraph::launch() {}
}  // namespace parbench

#endif
