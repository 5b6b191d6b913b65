// ddp: replicated parameters; gradients allreduced in buckets (PyTorch's rules: parameters in reverse order of
// definition, the first bucket 1 MiB, the others --bucket-mb, a parameter never split), each bucket launched on
// the communication thread as soon as its gradients are final, overlapping the rest of backward (--no-overlap:
// all after backward). With gradient accumulation only the last microbatch communicates (no_sync).
#include <algorithm>
#include <memory>

#include "base/error.h"
#include "parallel/comm_queue.h"
#include "profiles/range.h"
#include "parallel/schemes/data_parallel.h"

namespace parbench {

namespace {

struct Bucket {
  std::int64_t begin, end;  // flat element range
  int lowest_unit;          // ready once backward has finished this unit
};

std::vector<Bucket> plan_buckets(const ParamLayout& layout, DType t, double bucket_mb) {
  const std::int64_t es = std::int64_t(dtype_size(t));
  std::vector<Bucket> buckets;
  // The first bucket holds at most 1 MiB (or the bucket size if smaller), so communication starts early.
  std::int64_t cap = std::min(std::int64_t(1) << 20, std::int64_t(bucket_mb * double(1 << 20)));
  Bucket cur{-1, -1, 0};
  for (int u = int(layout.units.size()) - 1; u >= 0; --u) {
    const UnitLayout& unit = layout.units[u];
    for (int i = int(unit.params.size()) - 1; i >= 0; --i) {
      const std::int64_t begin = unit.offset + unit.params[i].offset;
      const std::int64_t end = i + 1 < int(unit.params.size()) ? unit.offset + unit.params[i + 1].offset
                                                               : unit.offset + unit.numel;
      if (cur.end >= 0 && (cur.end - begin) * es > cap) {
        buckets.push_back(cur);
        cap = std::int64_t(bucket_mb * double(1 << 20));
        cur = {-1, -1, 0};
      }
      if (cur.end < 0) cur.end = end;
      cur.begin = begin;
      cur.lowest_unit = u;
    }
  }
  if (cur.end >= 0) buckets.push_back(cur);
  return buckets;
}

class Ddp : public DataParallelScheme {
 public:
  Ddp(const TrainConfig& cfg, RankContext ctx)
      : DataParallelScheme(cfg, ctx),
        params_(initial_full_params(MemCategory::parameters)),
        grads_(make(params_.numel(), MemCategory::gradients)),
        opt_(cfg_, ctx.alloc, params_, ctx.stream),
        buckets_(plan_buckets(model_->layout(), cfg.model.dtype, cfg.bucket_mb)),
        queue_(ctx.comm, ctx.stream, ctx.communication_stream(), ctx.timeline, *impl_for(Collective::allreduce)) {
    if (cfg.bucket_mb <= 0) throw UsageError("--bucket-mb " + std::to_string(cfg.bucket_mb) + " must be > 0");
  }

  void queue_step(int step_index) override {
    comm_bytes_ = {};
    zero(grads_);
    Access access(*this);
    run_microbatches(step_index, access, [&] { access.sync = true; });
    if (!cfg_.overlap)
      for (std::size_t b = 0; b < buckets_.size(); ++b) launch(b);
    queue_.join();
    opt_.step(params_, grads_, step_index, ctx_.stream);
  }

  std::vector<float> full_params() override { return to_host_floats(params_); }
  MemSplit estimated_state_bytes() const override {
    return zero_closed_form(cfg_, model_->layout().parameters, dp_, 0);
  }

 private:
  struct Access : FlatAccess {
    explicit Access(Ddp& d) : FlatAccess(d.model_->layout(), d.params_, d.grads_), ddp(d) {}
    void backward_done(int unit) override {
      if (!sync || !ddp.cfg_.overlap) return;
      // Buckets are in gradient-ready order, so the ready ones are a prefix of those not yet launched.
      while (next < ddp.buckets_.size() && ddp.buckets_[next].lowest_unit >= unit) ddp.launch(next++);
    }
    Ddp& ddp;
    bool sync = false;  // the last microbatch: gradients become final
    std::size_t next = 0;
  };

  void launch(std::size_t b) {
    const Bucket& bucket = buckets_[b];
    Tensor slice = grads_.slice(bucket.begin, {bucket.end - bucket.begin});
    comm_bytes_.allreduce(std::uint64_t(slice.bytes()), dp_);
    queue_.submit([this, slice, b](const Stream&) {
      PB_RANGE("allreduce bucket", Category::communication, {.chunk = std::int64_t(b), .bytes = std::int64_t(slice.bytes())});
      ctx_.comm.allreduce(slice.data(), slice.data(), std::size_t(slice.numel()), slice.dtype(), ReduceOp::sum,
                          impl_for(Collective::allreduce));
    });
  }

  Tensor params_, grads_;
  FlatOptimizer opt_;
  std::vector<Bucket> buckets_;
  CommQueue queue_;
};

}  // namespace

std::unique_ptr<Scheme> make_ddp(const TrainConfig& cfg, RankContext ctx) { return std::make_unique<Ddp>(cfg, ctx); }

}  // namespace parbench
