// Stream capture and CUDA graphs on the emulated GPU: a capturing stream records the work queued on it (kernels,
// copies, fills, event records, NCCL operations, cuBLAS calls) as the nodes of its graph instead of running it;
// cudaGraphLaunch queues every node, in capture order, on the launch stream, once per launch. The calls CUDA
// forbids during a capture fail as CUDA's do and invalidate the capture. One stream per capture: a second stream
// joining it through an event is refused (see README "The emulated GPU build").
#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "device/emu/emu.h"
#include "device/emu/internal_streams.h"

namespace parbench::gpu_emu {

struct GraphNode {
  std::string what;
  Reissue issue;
};

struct GraphState {
  std::uint32_t magic = 0;
  int device = 0;
  std::deque<GraphNode> nodes;  // a deque: cudaGraphGetNodes hands out their addresses
};

struct ExecState {
  std::uint32_t magic = 0;
  int device = 0;
  std::vector<GraphNode> nodes;
};

struct Capture {
  unsigned long long id = 0;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  StreamState* origin = nullptr;
  GraphState* graph = nullptr;
  bool invalidated = false;
  std::string why;  // what invalidated it
};

namespace {

constexpr std::uint32_t kGraphMagic = 0x47525048;  // "GRPH"
constexpr std::uint32_t kExecMagic = 0x47455843;   // "GEXC"

struct Graphs {
  std::mutex m;
  std::vector<std::shared_ptr<Capture>> active;
  std::vector<std::unique_ptr<GraphState>> graphs;  // never freed, so that a destroyed handle stays recognisable
  std::vector<std::unique_ptr<ExecState>> execs;
  unsigned long long next_id = 1;
};
Graphs& graphs() {
  static auto* g = new Graphs;  // never destroyed: stream workers may still run while the program exits
  return *g;
}
std::atomic<int> g_capturing{0};  // captures going on: the fast path of every enqueue reads only this
thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;  // cudaThreadExchangeStreamCaptureMode

std::string stream_text(const StreamState* s) {
  return "stream " + std::to_string(s->id) + " of GPU " + std::to_string(s->device);
}

const char* mode_name(cudaStreamCaptureMode m) {
  return m == cudaStreamCaptureModeGlobal ? "global" : m == cudaStreamCaptureModeThreadLocal ? "thread-local" : "relaxed";
}

void invalidate(Capture& c, const std::string& why) {  // graphs().m held
  if (c.invalidated) return;
  c.invalidated = true;
  c.why = why;
}

GraphState* resolve_graph(cudaGraph_t h) {  // graphs().m held
  auto* x = reinterpret_cast<GraphState*>(h);
  for (const auto& g : graphs().graphs)
    if (g.get() == x) return x->magic == kGraphMagic ? x : nullptr;
  return nullptr;
}

ExecState* resolve_exec(cudaGraphExec_t h) {  // graphs().m held
  auto* x = reinterpret_cast<ExecState*>(h);
  for (const auto& e : graphs().execs)
    if (e.get() == x) return x->magic == kExecMagic ? x : nullptr;
  return nullptr;
}

void end_capture(Graphs& g, StreamState* s) {  // g.m held
  auto c = s->capture;
  s->capture.reset();
  g.active.erase(std::remove(g.active.begin(), g.active.end(), c), g.active.end());
  --g_capturing;
}

}  // namespace

bool record_if_capturing(StreamState* s, const std::string& what, Reissue reissue) {
  if (g_capturing.load(std::memory_order_acquire) == 0) return false;
  Graphs& g = graphs();
  std::lock_guard<std::mutex> l(g.m);
  if (!s->capture) return false;
  Capture& c = *s->capture;
  if (c.invalidated) {
    fail(cudaErrorStreamCaptureInvalidated, what + " on " + stream_text(s) + ", whose capture was invalidated: " + c.why);
    return true;
  }
  c.graph->nodes.push_back({what, std::move(reissue)});
  return true;
}

unsigned long long capture_id(StreamState* s) {
  if (!s || g_capturing.load(std::memory_order_acquire) == 0) return 0;
  std::lock_guard<std::mutex> l(graphs().m);
  return s->capture ? s->capture->id : 0;
}

bool capture_live(unsigned long long id) {
  if (id == 0) return false;
  std::lock_guard<std::mutex> l(graphs().m);
  for (const auto& c : graphs().active)
    if (c->id == id) return true;
  return false;
}

void invalidate_capture(unsigned long long id, const std::string& why) {
  std::lock_guard<std::mutex> l(graphs().m);
  for (const auto& c : graphs().active)
    if (c->id == id) invalidate(*c, why);
}

cudaError_t capture_forbids(const char* api, const std::string& site) {
  if (g_capturing.load(std::memory_order_acquire) == 0 || t_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  Graphs& g = graphs();
  std::string which;
  {
    std::lock_guard<std::mutex> l(g.m);
    const auto me = std::this_thread::get_id();
    for (const auto& c : g.active) {
      const bool own = c->thread == me && c->mode != cudaStreamCaptureModeRelaxed;
      const bool global = c->thread != me && c->mode == cudaStreamCaptureModeGlobal && t_mode == cudaStreamCaptureModeGlobal;
      if (!own && !global) continue;
      which = stream_text(c->origin) + " (" + mode_name(c->mode) + " capture" + (own ? " of this thread)" : " of another thread)");
      invalidate(*c, std::string(api) + " from " + site + " during the capture");
    }
  }
  if (which.empty()) return cudaSuccess;
  return fail(cudaErrorStreamCaptureUnsupported,
              std::string(api) + " from " + site + " while " + which +
                  " captures: CUDA forbids it during such a capture, which is now invalidated; call it before "
                  "cudaStreamBeginCapture or after cudaStreamEndCapture");
}

cudaError_t refuse_on_capturing(StreamState* s, const char* api) {
  if (!s || g_capturing.load(std::memory_order_acquire) == 0) return cudaSuccess;
  std::lock_guard<std::mutex> l(graphs().m);
  if (!s->capture) return cudaSuccess;
  invalidate(*s->capture, std::string(api) + " on the capturing stream");
  return fail(cudaErrorStreamCaptureUnsupported, std::string(api) + " on " + stream_text(s) +
                                                     ", which captures: its work has not run (the capture is now "
                                                     "invalidated)");
}

void legacy_work_during_capture(int device, const std::string& what) {
  if (g_capturing.load(std::memory_order_acquire) == 0) return;
  std::string which;
  {
    std::lock_guard<std::mutex> l(graphs().m);
    for (const auto& c : graphs().active)
      if (c->origin->device == device && !c->origin->non_blocking) {
        which = stream_text(c->origin);
        invalidate(*c, what + " on the legacy default stream, which would depend on the capture");
      }
  }
  if (!which.empty())
    fail(cudaErrorStreamCaptureImplicit, what + " on the legacy default stream of GPU " + std::to_string(device) +
                                             " while the blocking " + which +
                                             " captures (create it with cudaStreamNonBlocking)");
}

}  // namespace parbench::gpu_emu

using namespace parbench::gpu_emu;

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  StreamState* st = resolve_stream(stream);
  if (!st) return bad_stream("cudaStreamBeginCapture");
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue, "cudaStreamBeginCapture: mode " + std::to_string(int(mode)) +
                                           " is not a cudaStreamCaptureMode (global, thread-local or relaxed)");
  if (st->legacy)
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture on the legacy default stream of GPU " +
                                                       std::to_string(st->device) + ": only created streams capture");
  Graphs& g = graphs();
  std::lock_guard<std::mutex> l(g.m);
  if (st->capture) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture: " + stream_text(st) + " captures already");
  auto graph = std::make_unique<GraphState>();
  graph->magic = kGraphMagic, graph->device = st->device;
  auto c = std::make_shared<Capture>();
  c->id = g.next_id++, c->mode = mode, c->thread = std::this_thread::get_id(), c->origin = st, c->graph = graph.get();
  g.graphs.push_back(std::move(graph));
  st->capture = c;
  g.active.push_back(c);
  ++g_capturing;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* out) {
  if (!out) return fail(cudaErrorInvalidValue, "cudaStreamEndCapture with a null pointer");
  StreamState* st = resolve_stream(stream);
  if (!st) return bad_stream("cudaStreamEndCapture");
  Graphs& g = graphs();
  std::lock_guard<std::mutex> l(g.m);
  if (!st->capture) return fail(cudaErrorIllegalState, "cudaStreamEndCapture: " + stream_text(st) + " is not capturing");
  const std::shared_ptr<Capture> c = st->capture;
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread, "cudaStreamEndCapture of the " + std::string(mode_name(c->mode)) +
                                                       " capture of " + stream_text(st) +
                                                       " from a thread other than the one that began it");
  end_capture(g, st);
  *out = nullptr;
  if (c->invalidated) {
    c->graph->magic = 0;
    c->graph->nodes.clear();
    return fail(cudaErrorStreamCaptureInvalidated, "the capture of " + stream_text(st) + " was invalidated: " + c->why);
  }
  *out = reinterpret_cast<cudaGraph_t>(c->graph);
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (!status) return fail(cudaErrorInvalidValue, "cudaStreamIsCapturing with a null pointer");
  StreamState* st = resolve_stream(stream);
  if (!st) return bad_stream("cudaStreamIsCapturing");
  std::lock_guard<std::mutex> l(graphs().m);
  *status = !st->capture ? cudaStreamCaptureStatusNone
            : st->capture->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* deps_count) {
  if (!status) return fail(cudaErrorInvalidValue, "cudaStreamGetCaptureInfo with a null status pointer");
  StreamState* st = resolve_stream(stream);
  if (!st) return bad_stream("cudaStreamGetCaptureInfo");
  thread_local cudaGraphNode_t last;  // the one dependency of the next node: captures here are a single chain
  std::lock_guard<std::mutex> l(graphs().m);
  const Capture* c = st->capture.get();
  *status = !c ? cudaStreamCaptureStatusNone
            : c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  const bool chain = c && !c->graph->nodes.empty();
  if (chain) last = reinterpret_cast<cudaGraphNode_t>(&c->graph->nodes.back());
  if (id) *id = c ? c->id : 0;
  if (graph) *graph = c ? reinterpret_cast<cudaGraph_t>(c->graph) : nullptr;
  if (deps) *deps = chain ? &last : nullptr;
  if (edges) *edges = nullptr;  // every edge is a plain one
  if (deps_count) *deps_count = chain ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (!mode) return fail(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode with a null pointer");
  if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
      *mode != cudaStreamCaptureModeRelaxed)
    return fail(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode: " + std::to_string(int(*mode)) +
                                           " is not a cudaStreamCaptureMode");
  std::swap(*mode, t_mode);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!count) return fail(cudaErrorInvalidValue, "cudaGraphGetNodes with a null count pointer");
  std::lock_guard<std::mutex> l(graphs().m);
  GraphState* g = resolve_graph(graph);
  if (!g) return fail(cudaErrorInvalidValue, "cudaGraphGetNodes: not a live graph");
  if (!nodes) {
    *count = g->nodes.size();
    return cudaSuccess;
  }
  const std::size_t n = std::min(*count, g->nodes.size());
  for (std::size_t i = 0; i < *count; ++i)
    nodes[i] = i < n ? reinterpret_cast<cudaGraphNode_t>(&g->nodes[i]) : nullptr;
  *count = n;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate with a null pointer");
  // No memory nodes and no priorities here: these two flags change nothing; uploads and device launches do not exist.
  const unsigned long long harmless = cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if (flags & ~harmless)
    return fail(cudaErrorInvalidValue, "cudaGraphInstantiate flags " + std::to_string(flags) +
                                           ": the emulated GPU accepts 0, cudaGraphInstantiateFlagAutoFreeOnLaunch "
                                           "and cudaGraphInstantiateFlagUseNodePriority");
  Graphs& g = graphs();
  std::lock_guard<std::mutex> l(g.m);
  GraphState* src = resolve_graph(graph);
  if (!src) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate: not a live graph");
  auto e = std::make_unique<ExecState>();
  e->magic = kExecMagic, e->device = src->device;
  e->nodes.assign(src->nodes.begin(), src->nodes.end());
  *exec = reinterpret_cast<cudaGraphExec_t>(e.get());
  g.execs.push_back(std::move(e));
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  StreamState* st = work_stream(stream, "cudaGraphLaunch", PB_EMU_SITE());
  if (!st) return bad_stream("cudaGraphLaunch");
  std::vector<GraphNode> nodes;
  int device = 0;
  {
    std::lock_guard<std::mutex> l(graphs().m);
    ExecState* e = resolve_exec(exec);
    if (!e) return fail(cudaErrorInvalidValue, "cudaGraphLaunch: not a live executable graph");
    nodes = e->nodes, device = e->device;
  }
  if (st->device != device)
    return fail(cudaErrorInvalidValue, "cudaGraphLaunch of a graph of GPU " + std::to_string(device) +
                                           " into a stream of GPU " + std::to_string(st->device));
  if (cudaError_t e = sticky(device); e != cudaSuccess) return e;
  if (const unsigned long long id = capture_id(st); id != 0) {
    invalidate_capture(id, "cudaGraphLaunch into the capturing stream");
    return fail(cudaErrorStreamCaptureUnsupported,
                "cudaGraphLaunch into a capturing stream (a child graph node): not emulated");
  }
  count(Count::graph_launch);
  for (const GraphNode& n : nodes) n.issue(st);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard<std::mutex> l(graphs().m);
  ExecState* e = resolve_exec(exec);
  if (!e) return fail(cudaErrorInvalidValue, "cudaGraphExecDestroy: not a live executable graph");
  e->magic = 0;
  e->nodes.clear();  // launches already queued keep their own copies of the work
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> l(graphs().m);
  GraphState* g = resolve_graph(graph);
  if (!g) return fail(cudaErrorInvalidValue, "cudaGraphDestroy: not a live graph");
  g->magic = 0;
  g->nodes.clear();
  return cudaSuccess;
}

}  // extern "C"
