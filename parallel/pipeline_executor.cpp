// The pipeline executor: one interpreter for every schedule's action lists.
#include "parallel/pipeline_executor.h"

#include <algorithm>
#include <memory>

#include "collectives/communicator/fault_injection.h"
#include "base/error.h"
#include "profiles/range.h"

namespace parbench {

namespace {

class StageRun {
 public:
  explicit StageRun(const PipelineStage& s)
      : s_(s),
        stage_(s.pipeline.rank()),
        m_(s.schedule.microbatches),
        vstages_(s.schedule.virtual_stages()),
        slots_(std::size_t(m_ * vstages_)),
        batches_(std::size_t(m_)) {
    PB_CHECK(s.action_times && s.losses, "a pipeline stage needs its action timeline and loss tally");
    if (s.pipeline.size() != s.schedule.stages)
      throw Error("pipeline group of " + std::to_string(s.pipeline.size()) + " ranks runs a schedule of " +
                  std::to_string(s.schedule.stages) + " stages");
    if (int(s.chunk_units.size()) != s.schedule.chunks)
      throw Error("pipeline stage has " + std::to_string(s.chunk_units.size()) + " model chunks, the schedule " +
                  std::to_string(s.schedule.chunks));
  }

  ~StageRun() {
    if (!posted_.empty() && !s_.stream_path) s_.pipeline.abandon_sends();  // a failure: no peer may read them now
  }

  PipelineStepResult run() {
    s_.action_times->start(s_.stream);
    const auto& list = s_.schedule.actions[std::size_t(stage_)];
    for (std::size_t i = 0; i < list.size();) {
      if (is_compute(list[i].op)) {
        compute(list[i++]);
        continue;
      }
      std::size_t end = i;
      while (end < list.size() && !is_compute(list[end].op)) ++end;
      exchange(list, i, end);
      i = end;
    }
    if (PipelineStreamPath* sp = s_.stream_path) {  // the compute stream's later work waits for the last sends
      sp->done.record(sp->comm);
      sp->done.wait_on(s_.stream);
    } else {
      PB_RANGE("finish sends", Category::communication, {.stage = stage_});
      s_.pipeline.finish_sends();
    }
    posted_.clear();
    return result_;
  }

 private:
  // What one (microbatch, virtual stage) holds between its actions.
  struct Slot {
    Tensor input;        // activation at its input (received, or handed over on this rank)
    Tensor output_grad;  // gradient at its output
    Tensor input_grad;   // gradient at its input, until sent
    std::unique_ptr<Activations> acts;
  };

  int vstage(const PipeAction& a) const { return s_.schedule.virtual_stage(stage_, a.chunk); }
  Slot& slot(int mb, int vs) { return slots_[std::size_t(mb * vstages_ + vs)]; }
  bool here(int vs) const { return vs % s_.schedule.stages == stage_; }
  int tag(bool gradient, int mb, int receiving_vs) const {
    return kFirstMatchedTag + 2 * (mb * vstages_ + receiving_vs) + (gradient ? 1 : 0);
  }
  const Batch& batch(int mb) {
    Batch& b = batches_[std::size_t(mb)];
    if (b.samples == 0) b = s_.batch(mb);
    return b;
  }

  void compute(const PipeAction& a) {
    fault_point(s_.pipeline);  // test faults (fault_injection.h) strike stage R's compute actions
    const int vs = vstage(a), mb = a.microbatch;
    Slot& sl = slot(mb, vs);
    const RangeArgs args{.microbatch = mb, .stage = stage_, .chunk = a.chunk};
    TimelineSpan timed(s_.action_times, StreamTimeline::Lane::compute, s_.stream);
    switch (a.op) {
      case PipeOp::forward: {
        PB_RANGE("F", Category::compute, args);
        sl.acts = s_.model.forward(batch(mb), s_.chunk_units[std::size_t(a.chunk)], sl.input, s_.access, s_.dloss,
                                   s_.stream, nullptr);
        sl.input = Tensor{};
        if (vs == vstages_ - 1) s_.losses->add(sl.acts->losses, s_.stream);
        else if (here(vs + 1)) slot(mb, vs + 1).input = sl.acts->output();
        ++in_flight_;
        result_.peak_in_flight = std::max(result_.peak_in_flight, in_flight_);
        break;
      }
      case PipeOp::backward:
      case PipeOp::backward_input: {
        const bool whole = a.op == PipeOp::backward;
        PB_RANGE(whole ? "B" : "B input", Category::compute, args);
        if (!sl.acts) throw Error("pipeline: backward of microbatch " + std::to_string(mb) + " before its forward");
        Tensor dx = s_.model.backward(*sl.acts, batch(mb), sl.output_grad, s_.access, s_.stream,
                                      whole ? BackwardPart::all : BackwardPart::input);
        sl.output_grad = Tensor{};
        if (vs > 0) (here(vs - 1) ? slot(mb, vs - 1).output_grad : sl.input_grad) = dx;
        if (whole) release(sl);
        break;
      }
      case PipeOp::backward_weight: {
        PB_RANGE("W", Category::compute, args);
        s_.model.backward(*sl.acts, batch(mb), Tensor{}, s_.access, s_.stream, BackwardPart::weight);
        release(sl);
        break;
      }
      default: throw Error("pipeline: not a compute action");
    }
  }

  void release(Slot& sl) {
    sl.acts.reset();
    --in_flight_;
  }

  // Actions [begin, end). Through the host transports, sends are posted and complete in the background (the
  // schedules assume buffered sends: a blocking send to a neighbour that is sending to us can deadlock, and a thread
  // per send would add a wake-up to every hand-over) and receives are posted together and waited for here. On the
  // stream path they are one NCCL group on the communication stream, after the compute stream's work so far.
  void exchange(const std::vector<PipeAction>& list, std::size_t begin, std::size_t end) {
    std::vector<P2POp> ops;  // in action order
    for (std::size_t i = begin; i < end; ++i) {
      const PipeAction& a = list[i];
      const int vs = vstage(a), mb = a.microbatch;
      Slot& sl = slot(mb, vs);
      auto fresh = [&] {
        return Tensor(s_.alloc, s_.model.config().dtype, s_.model.boundary_shape(batch(mb).samples),
                      MemCategory::communication);
      };
      switch (a.op) {
        case PipeOp::recv_activation:
          sl.input = fresh();
          ops.push_back(recv_op(sl.input.data(), sl.input.bytes(), a.peer));
          ops.back().tag = tag(false, mb, vs);
          break;
        case PipeOp::recv_gradient:
          sl.output_grad = fresh();
          ops.push_back(recv_op(sl.output_grad.data(), sl.output_grad.bytes(), a.peer));
          ops.back().tag = tag(true, mb, vs);
          break;
        case PipeOp::send_activation:
          ops.push_back(send(sl.acts->output(), a.peer, tag(false, mb, vs + 1), mb));
          break;
        case PipeOp::send_gradient:
          ops.push_back(send(sl.input_grad, a.peer, tag(true, mb, vs - 1), mb));
          sl.input_grad = Tensor{};
          break;
        default: throw Error("pipeline: not a communication action");
      }
    }
    if (s_.stream_path) return queue_on_stream(ops);
    std::vector<P2POp> sends, recvs;
    for (const P2POp& op : ops) (op.kind == P2POp::send ? sends : recvs).push_back(op);
    if (!sends.empty()) {
      s_.stream.synchronize();  // the host transports hand the buffers over at once: they must be written
      s_.pipeline.post_sends(sends);
    }
    if (recvs.empty()) return;
    PB_RANGE("recv", Category::communication, {.stage = stage_});
    s_.pipeline.group(recvs);
  }

  // The exchange's messages in action order, so that NCCL's in-order matching pairs them as the schedule does.
  void queue_on_stream(const std::vector<P2POp>& ops) {
    PB_RANGE("exchange", Category::communication, {.stage = stage_});
    PipelineStreamPath& sp = *s_.stream_path;
    sp.ready.record(s_.stream);  // what is sent is written, and what is received overwrites nothing still read
    sp.ready.wait_on(sp.comm);
    s_.pipeline.queue_group(ops, sp.comm.native());
    if (std::none_of(ops.begin(), ops.end(), [](const P2POp& op) { return op.kind == P2POp::recv; })) return;
    sp.done.record(sp.comm);
    sp.done.wait_on(s_.stream);
  }

  // A send of `t`, held (with its memory) until the step's sends are finished.
  P2POp send(const Tensor& t, int peer, int tag, int mb) {
    PB_RANGE("send", Category::communication, {.microbatch = mb, .stage = stage_, .bytes = std::int64_t(t.bytes())});
    result_.sent_bytes += t.bytes();
    P2POp op = send_op(t.data(), t.bytes(), peer);
    op.tag = tag;
    posted_.push_back(t);
    return op;
  }

  const PipelineStage& s_;
  const int stage_, m_, vstages_;
  std::vector<Slot> slots_;
  std::vector<Batch> batches_;
  PipelineStepResult result_;
  int in_flight_ = 0;
  std::vector<Tensor> posted_;  // sent tensors, alive until finish_sends
};

}  // namespace

PipelineStepResult run_pipeline_stage(const PipelineStage& stage) { return StageRun(stage).run(); }

PipelineTiming pipeline_timing(const StreamTimeline& action_times, int peak_in_flight) {
  PipelineTiming t;
  t.peak_in_flight = peak_in_flight;
  for (const StreamTimeline::Interval& iv : action_times.intervals()) {
    t.action_ms.push_back(iv.end_ms - iv.begin_ms);
    t.busy_ms += iv.end_ms - iv.begin_ms;
    t.span_ms = std::max(t.span_ms, iv.end_ms);
  }
  return t;
}

}  // namespace parbench
