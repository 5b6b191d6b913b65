// A CUDA graph captured from one stream, as nccl-tests' -G makes one: constructing it starts capturing the stream,
// end() stops and instantiates, launch() queues the whole graph on the stream again. Thread-local capture mode, so
// that rank threads capturing at the same time do not forbid each other's calls. CUDA builds only (throws
// otherwise).
#pragma once

namespace parbench {

class StreamGraph {
 public:
  explicit StreamGraph(void* stream);  // cudaStream_t: a created stream (the legacy default stream cannot capture)
  ~StreamGraph();  // a capture still open (an exception) is ended and dropped
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;

  // Ends the capture and instantiates the graph; throws naming CUDA's reason (a call the capture forbids).
  void end();
  // Queues the captured work on the stream once more.
  void launch();

 private:
  void* stream_;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  bool capturing_ = false;
};

}  // namespace parbench
