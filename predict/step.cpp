// One step: the schedule's action lists played with these costs (parallel/schedule/play.cpp), then the
// data-parallel reduction and the optimizer; the split of the slowest stage's time; throughput and memory.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/dtype.h"
#include "base/error.h"
#include "parallel/plan/partition.h"
#include "parallel/plan/plan.h"
#include "parallel/schedule/play.h"
#include "predict/collective_model.h"
#include "predict/costs.h"
#include "predict/memory.h"
#include "predict/zero3.h"

namespace parbench::predict {

namespace {

bool allreduces_whole(DpReduce r) { return r == DpReduce::allreduce || r == DpReduce::fp32_allreduce; }

// Compute-action costs per stage in list order, from each virtual stage's pass costs.
std::vector<std::vector<double>> action_costs(const PipeSchedule& s, const std::vector<PassCosts>& vs_costs) {
  std::vector<std::vector<double>> out(std::size_t(s.stages));
  for (int st = 0; st < s.stages; ++st)
    for (const PipeAction& a : s.actions[std::size_t(st)]) {
      const PassCosts& c = vs_costs[std::size_t(s.virtual_stage(st, a.chunk))];
      switch (a.op) {
        case PipeOp::forward: out[st].push_back(c.f()); break;
        case PipeOp::backward: out[st].push_back(c.bi() + c.w()); break;
        case PipeOp::backward_input: out[st].push_back(c.bi()); break;
        case PipeOp::backward_weight: out[st].push_back(c.w()); break;
        default: break;
      }
    }
  return out;
}

// A stage boundary's message: the (b, s, h) activation or its gradient. With tensor parallelism each rank of the
// group sends a 1/t slice over its own link and the receivers all-gather it (Megatron's scatter-gather), unless
// sequence parallelism already keeps only the slice.
double transfer_seconds(const Layout& l, const SystemModel& sys) {
  if (l.pp <= 1) return 0;
  const double bytes = activation_bytes(l);
  const int stride = l.tp * l.dp;  // neighbouring stages' ranks in Megatron's order
  const GroupPlacement pair = stride >= sys.node_size() ? GroupPlacement{2, 1} : GroupPlacement{2, 2};
  double t = collective_cost(sys, Collective::sendrecv, bytes / l.tp, pair).seconds;
  if (l.tp > 1 && !l.sequence_parallel)
    t += collective_cost(sys, Collective::allgather, bytes, place_group(sys, l.tp, 1)).seconds;
  return t;
}

// ZeRO-3 gathers each block's parameters before its forward and backward, one block ahead, and reduce-scatters its
// gradients after the backward: played on the two streams for one chunk's blocks (predict/zero3.h), what the
// compute does not hide is spread over the chunk's blocks.
void add_zero3(const Layout& l, const SystemModel& sys, PassCosts& block) {
  if ((l.zero_stage < 3 && !l.zero2_fsdp) || l.dp <= 1) return;
  const int blocks = std::max(1, int(std::lround(l.blocks_of(0))));
  const double params = stage_parameter_counts(l)[0] / std::max(1.0, stage_block_count(l, 0));
  const double bytes = params * double(dtype_size(l.model.dtype));
  const GroupPlacement g = place_group(sys, l.dp, l.tp);
  Zero3Pass pass;
  pass.blocks = blocks;
  pass.forward = block.f(), pass.backward = block.bi() + block.w();
  pass.gather = collective_cost(sys, Collective::allgather, bytes, g).seconds;
  pass.scatter = collective_cost(sys, Collective::reduce_scatter, params * gradient_bytes(l), g).seconds;
  pass.regather_backward = l.zero_stage >= 3;  // SHARD_GRAD_OP keeps the forward's parameters
  const Zero3Exposed e = zero3_exposed(pass);
  block.zero3_forward = e.forward / blocks, block.zero3_backward = e.backward / blocks;
}

// ZeRO-1/2's all-gather of the updated parameters: after the optimizer, exposed whole; with param_gather_overlap
// (NeMo's overlap_param_sync, Megatron's --overlap-param-gather) block by block on the communication stream from the
// step's start, each block's share needed when its chunk's first forward reaches it: only the lateness shows (at
// least the first block's gather).
double parameter_gather_seconds(const Layout& l, const SystemModel& sys, const PipeSimulation& sim, int st,
                                double psi, GroupPlacement g) {
  const double bytes = psi * double(dtype_size(l.model.dtype));
  if (!l.param_gather_overlap) return collective_cost(sys, Collective::allgather, bytes, g).seconds;
  std::vector<int> chunk_blocks;
  for (int c = 0; c < l.virtual_stages; ++c)
    chunk_blocks.push_back(std::max(1, int(std::lround(l.blocks_of(c * l.pp + st)))));
  const int blocks = std::accumulate(chunk_blocks.begin(), chunk_blocks.end(), 0);
  const double per_block = collective_cost(sys, Collective::allgather, bytes / blocks, g).seconds;
  const auto& timeline = sim.timeline[std::size_t(st)];
  double late = per_block;
  int gathered = 0;
  for (int c = 0; c < l.virtual_stages; ++c) {
    const auto first = std::find_if(timeline.begin(), timeline.end(), [&](const TimedAction& t) {
      return t.action.chunk == c && t.action.op == PipeOp::forward;
    });
    if (first == timeline.end()) continue;
    const int n = chunk_blocks[std::size_t(c)];
    for (int j = 0; j < n; ++j)
      late = std::max(late, ++gathered * per_block - (first->start + (first->end - first->start) * j / n));
  }
  return late;
}

// The data-parallel gradient reduction as events on stage `st`'s communication stream: each chunk's gradients
// become final during its last backward (weight-gradient) action, in 25 MiB buckets, one every 1/n of that action
// (reverse layer order, as DDP fills them); the stream reduces them in order of readiness. Returns how far the
// reduction (and ZeRO-1/2's all-gather of the updated parameters, after the optimizer) runs past `span`.
double dp_exposed_seconds(const Layout& l, const SystemModel& sys, const PipeSimulation& sim, int st, double psi,
                          double span) {
  // ZeRO-3 and FSDP's ZeRO-2 reduce per block inside the passes (add_zero3).
  if (l.dp <= 1 || l.zero_stage >= 3 || l.zero2_fsdp) return 0;
  const double chunk_bytes = psi * gradient_bytes(l) / l.virtual_stages;
  const double bucket_cap = 25.0 * 1048576;
  const int buckets = std::max(1, int(std::ceil(chunk_bytes / bucket_cap)));
  const GroupPlacement g = place_group(sys, l.dp, l.tp);
  const bool whole = l.zero_stage == 0 || allreduces_whole(l.dp_reduce);
  const Collective op = whole ? Collective::allreduce : Collective::reduce_scatter;
  const double per_bucket = collective_cost(sys, op, chunk_bytes / buckets, g).seconds;
  std::vector<double> ready;
  for (int c = 0; c < l.virtual_stages; ++c) {
    const TimedAction* last = nullptr;  // the chunk's last gradient-producing action
    for (const TimedAction& t : sim.timeline[std::size_t(st)])
      if (t.action.chunk == c && (t.action.op == PipeOp::backward || t.action.op == PipeOp::backward_weight)) last = &t;
    if (!last) continue;
    for (int i = 1; i <= buckets; ++i) ready.push_back(last->start + (last->end - last->start) * i / buckets);
  }
  std::sort(ready.begin(), ready.end());
  if (l.dp_reduce_at_end && !ready.empty()) std::fill(ready.begin(), ready.end(), ready.back());
  double stream = 0;
  for (double r : ready) stream = std::max(stream, r) + per_bucket;
  double exposed = std::max(0.0, stream - span);
  if (l.zero_stage >= 1) exposed += parameter_gather_seconds(l, sys, sim, st, psi, g);
  return exposed;
}

// Tied embeddings over a pipeline: the first and last stages allreduce the shared weight's gradient (their V/t x h
// share, in the gradients' type) between them once the backward ends; 0 on every other stage. The pair shares a node
// only when the whole job does (in Megatron's order they are (pp - 1) / pp of the ranks apart).
double tied_embedding_seconds(const Layout& l, const SystemModel& sys, int st) {
  if (!l.tied_embeddings || l.pp == 1 || (st != 0 && st != l.pp - 1)) return 0;
  const double bytes = double(l.model.vocab / l.tp) * l.model.hidden * gradient_bytes(l);
  const GroupPlacement pair = l.gpus <= sys.node_size() ? GroupPlacement{2, 2} : GroupPlacement{2, 1};
  return collective_cost(sys, Collective::allreduce, bytes, pair).seconds;
}

double optimizer_seconds(const Layout& l, const SystemModel& sys, double psi) {
  const OptimizerKind optimizer = l.adamw ? OptimizerKind::adamw : OptimizerKind::sgd;
  const double k = double(optimizer_state_bytes_per_param(optimizer, l.model.dtype));
  const double p = double(dtype_size(l.model.dtype));
  const double shard = l.zero_stage >= 1 ? psi / l.dp : psi;
  // State read and written, gradient read, parameter written; without a master copy in the state (32-bit weights)
  // the update reads the parameter too.
  const double bytes = shard * (2 * k + 2 * p + (keeps_master_copy(l.model.dtype) ? 0 : p));
  return measured_rate_seconds(sys, bytes, sys.gpu.optimizer_gbps);
}

// The pipeline's schedule: the registered or file schedule, or one stage running each microbatch's forward and
// backward in turn (gradient accumulation holds one microbatch's activations).
PipeSchedule schedule_of(const Layout& l) {
  if (l.pp == 1) return make_schedule("1f1b", 1, l.microbatches(), 1);
  return make_schedule(l.schedule, l.pp, l.microbatches(), l.virtual_stages);
}

// Ranks that outnumber the node's compute units take turns (a CPU's cores): the schedule played again with the
// stages' ranks sharing the units (each stage's tp x dp ranks, the node's share of them), so that a pipeline's idle
// stages leave their cores to the others but its fill and drain, with fewer stages to run, leave cores idle. The
// factor by which the span grows.
double compute_sharing(const Layout& l, const SystemModel& sys, const PipeSchedule& sched, PipeCosts costs,
                       const PipeSimulation& sim) {
  const double units = sys.gpu.compute_units;
  const int per_node = std::min(l.gpus, sys.node_size());
  if (units <= 0 || per_node <= units || sim.makespan <= 0) return 1.0;
  costs.compute_units = units;
  costs.ranks_per_stage = double(l.tp) * l.dp * per_node / l.gpus;
  if (l.pinned) {
    // bench_train numbers ranks by ParallelGrid and --pin binds the node-local rank r to core r mod cores; a
    // stage's ranks on this node are its first per_stage in that order.
    const int cores = costs.bound_units(), per_stage = std::max(1, int(costs.ranks_per_stage));
    costs.stage_units.assign(std::size_t(l.pp), {});
    for (int st = 0; st < l.pp; ++st)
      for (int j = 0; j < per_stage; ++j) {
        const ParallelGrid g{l.dp, l.tp, l.pp, j / l.tp, j % l.tp, st};
        costs.stage_units[std::size_t(st)].push_back(g.rank() % per_node % cores);
      }
  }
  return std::max(1.0, simulate_schedule(sched, costs).makespan / sim.makespan);
}

// Every rank updates at once: with more ranks than compute units, the update stretches by ranks / units.
double updates_sharing(const Layout& l, const SystemModel& sys) {
  const double units = sys.gpu.compute_units, per_node = std::min(l.gpus, sys.node_size());
  return units > 0 && per_node > units ? per_node / units : 1.0;
}

}  // namespace

double Layout::blocks_of(int virtual_stage) const {
  if (stage_blocks.empty()) return double(model.layers) / (pp * virtual_stages);
  return stage_blocks.at(std::size_t(virtual_stage));
}

std::vector<PassCosts> all_stage_costs(const Layout& l, const SystemModel& sys) {
  PassCosts block = block_costs(l, sys);
  add_zero3(l, sys, block);
  const int n = l.pp * l.virtual_stages;
  std::vector<PassCosts> out;
  for (int vs = 0; vs < n; ++vs) {
    PassCosts c = block.times(l.blocks_of(vs));
    if (vs == 0) c += embedding_costs(l, sys);
    if (vs == n - 1) c += head_costs(l, sys);
    out.push_back(c);
  }
  return out;
}

namespace {

// The time split of stage `st`: its own work from the pass costs, the rest of the pipeline span as bubble and
// exposed pipeline communication.
TimeSplit stage_split(const Layout& l, const std::vector<PassCosts>& vs_costs, int st, double span,
                      double span_without_transfers) {
  TimeSplit t;
  const double m = l.microbatches();
  for (int c = 0; c < l.virtual_stages; ++c) {
    const PassCosts& k = vs_costs[std::size_t(c * l.pp + st)];
    t.forward += m * k.forward;
    t.backward += m * (k.backward_input + k.backward_weight);
    t.recompute += m * k.recompute;
    t.tp_comm += m * (k.forward_tp + k.backward_tp + k.recompute_tp);
    t.dp_comm += m * (k.zero3_forward + k.zero3_backward);
  }
  const double busy = t.forward + t.backward + t.recompute + t.tp_comm + t.dp_comm;
  t.bubble = std::max(0.0, span_without_transfers - busy);
  t.pp_comm = span - span_without_transfers;
  return t;
}

// Equal shares need divisible layers; given counts need one per virtual stage, each at least one block, summing to
// the layers.
void validate_stage_blocks(const Layout& l) {
  const int n = l.pp * l.virtual_stages;
  if (l.stage_blocks.empty()) {
    if (l.model.layers % n != 0)
      throw UsageError("--layers " + std::to_string(l.model.layers) + " is not divisible by --pp " +
                       std::to_string(l.pp) + " x --virtual-stages " + std::to_string(l.virtual_stages));
    return;
  }
  int sum = 0;
  for (int b : l.stage_blocks) sum += b;
  const bool each_positive = std::all_of(l.stage_blocks.begin(), l.stage_blocks.end(), [](int b) { return b >= 1; });
  if (int(l.stage_blocks.size()) != n || sum != l.model.layers || !each_positive)
    throw UsageError("partition " + partition_text(l.stage_blocks) + " does not spread --layers " +
                     std::to_string(l.model.layers) + " over " + std::to_string(n) +
                     " virtual stages; accepted: one count >= 1 per virtual stage, summing to the layers");
}

}  // namespace

void validate_layout(const Layout& l) {
  for (auto [name, v] : {std::pair{"--tp", l.tp}, {"--pp", l.pp}, {"--dp", l.dp}, {"--gpus", l.gpus},
                         {"--micro-batch", l.micro_batch}, {"--global-batch", l.global_batch}})
    if (v < 1) throw UsageError(std::string(name) + " " + std::to_string(v) + " must be >= 1");
  if (l.tp * l.pp * l.dp != l.gpus)
    throw UsageError("--tp " + std::to_string(l.tp) + " x --pp " + std::to_string(l.pp) + " x --dp " +
                     std::to_string(l.dp) + " = " + std::to_string(l.tp * l.pp * l.dp) + " GPUs, but --gpus is " +
                     std::to_string(l.gpus) + "; choose degrees whose product is the GPU count");
  if (l.global_batch % (l.dp * l.micro_batch) != 0)
    throw UsageError("--global-batch " + std::to_string(l.global_batch) + " is not divisible by --dp " +
                     std::to_string(l.dp) + " x --micro-batch " + std::to_string(l.micro_batch));
  if (l.zero_stage < 0 || l.zero_stage > 3)
    throw UsageError("--zero " + std::to_string(l.zero_stage) + " is not a ZeRO stage; accepted: 0, 1, 2, 3");
  if (l.zero2_fsdp && l.zero_stage != 2)
    throw UsageError("FSDP's SHARD_GRAD_OP is ZeRO-2, not --zero " + std::to_string(l.zero_stage) +
                     " (ZeRO-3 is FSDP's FULL_SHARD already)");
  if (allreduces_whole(l.dp_reduce) && l.zero_stage > 1)
    throw UsageError("--dp-reduce " + dp_reduce_name(l.dp_reduce) + " (DeepSpeed's pipeline engine) runs with --zero 0 "
                     "or 1, not --zero " + std::to_string(l.zero_stage));
  if (l.grad_accumulation != GradAccumulation::fused && l.zero_stage > 1)
    throw UsageError("--grad-accumulation " + grad_accumulation_name(l.grad_accumulation) + " (DeepSpeed's pipeline "
                     "engine) runs with --zero 0 or 1, not --zero " + std::to_string(l.zero_stage));
  if (l.tp_userbuffers && l.tp > 1 && !l.sequence_parallel)
    throw UsageError("--tp-userbuffers needs sequence parallelism (--sp): Transformer Engine overlaps the all-gathers "
                     "and reduce-scatters of --tp " + std::to_string(l.tp) + " only");
  ModelConfig m = l.model;
  m.tp = l.tp;
  m.sequence_parallel = l.sequence_parallel;
  m.validate();
  validate_stage_blocks(l);
  if (l.pp > 1) validate_schedule(l.schedule, l.pp, l.microbatches(), l.virtual_stages);
  else if (l.virtual_stages != 1)
    throw UsageError("--virtual-stages " + std::to_string(l.virtual_stages) + " needs a pipeline (--pp > 1)");
}

Prediction predict_step(const Layout& l, const SystemModel& sys, bool split_pp_comm) {
  validate_layout(l);
  return predict_with_costs(l, sys, all_stage_costs(l, sys), transfer_seconds(l, sys), split_pp_comm);
}

StepRange predict_step_range(const Layout& l, const SystemModel& sys) {
  return {predict_step(l, shifted_system(sys, +1), false).time.step,
          predict_step(l, shifted_system(sys, -1), false).time.step};
}

Prediction predict_with_costs(const Layout& l, const SystemModel& sys, const std::vector<PassCosts>& vs_costs,
                              double transfer, bool split_pp_comm) {
  const PipeSchedule sched = schedule_of(l);
  PipeCosts costs;
  costs.per_action = action_costs(sched, vs_costs);
  costs.transfer = transfer;
  costs.blocking_sends = l.blocking_p2p;
  const PipeSimulation sim = simulate_schedule(sched, costs);
  const double share = compute_sharing(l, sys, sched, costs, sim);
  double span0 = sim.makespan;
  if (split_pp_comm && costs.transfer > 0) {
    costs.transfer = 0;
    span0 = simulate_schedule(sched, costs).makespan;
  }
  Prediction out;
  double worst = -1;
  const std::vector<double> params = stage_parameter_counts(l);
  for (int st = 0; st < l.pp; ++st) {  // the step ends when the slowest stage's reduction and update end
    const double psi = params[std::size_t(st)];
    TimeSplit t = stage_split(l, vs_costs, st, sim.makespan, span0);
    for (double* x : {&t.forward, &t.backward, &t.recompute, &t.tp_comm, &t.dp_comm, &t.bubble, &t.pp_comm}) *x *= share;
    t.dp_comm += dp_exposed_seconds(l, sys, sim, st, psi, sim.makespan);
    t.pp_comm += tied_embedding_seconds(l, sys, st);
    t.optimizer = optimizer_seconds(l, sys, psi) * updates_sharing(l, sys);
    t.step = t.forward + t.backward + t.recompute + t.tp_comm + t.dp_comm + t.bubble + t.pp_comm + t.optimizer;
    if (t.step > worst) worst = t.step, out.time = t;
    const MemSplit mem = stage_memory(l, st, sim.peak_in_flight[std::size_t(st)], psi);
    double total = 0;
    for (std::size_t b : mem) total += double(b);
    if (total > out.peak_bytes) {
      out.peak_bytes = total, out.memory = mem, out.heaviest_stage = st;
      out.state_bytes = double(mem[0] + mem[1] + mem[2]);
    }
  }
  const double step = out.time.step;
  out.tokens_per_s = double(l.global_batch) * l.model.tokens_per_sample() / step;
  out.tflops_per_gpu = model_flops_per_step(l.model, l.global_batch) / step / l.gpus / 1e12;
  out.mfu = out.tflops_per_gpu / sys.matrix_tflops(int(dtype_size(l.model.dtype)));
  out.bubble_theory = l.pp > 1 ? bubble_theory(sched) : 0;
  out.bubble_simulated = l.pp > 1 ? sim.mean_bubble() : 0;
  out.fits = out.peak_bytes <= sys.gpu.hbm_bytes;
  return out;
}

std::string recompute_name(Recompute r) {
  return r == Recompute::none ? "none" : r == Recompute::selective ? "selective" : "full";
}

Recompute parse_recompute(const std::string& s) {
  if (s == "none") return Recompute::none;
  if (s == "selective") return Recompute::selective;
  if (s == "full") return Recompute::full;
  throw UsageError("--recompute '" + s + "' is unknown; accepted: none, selective, full");
}

std::string dp_reduce_name(DpReduce r) {
  switch (r) {
    case DpReduce::model: return "model";
    case DpReduce::fp32: return "fp32";
    case DpReduce::allreduce: return "allreduce";
    case DpReduce::fp32_allreduce: return "fp32-allreduce";
  }
  return "?";
}

DpReduce parse_dp_reduce(const std::string& s) {
  for (DpReduce r : {DpReduce::model, DpReduce::fp32, DpReduce::allreduce, DpReduce::fp32_allreduce})
    if (s == dp_reduce_name(r)) return r;
  throw UsageError("--dp-reduce '" + s + "' is unknown; accepted: model, fp32, allreduce, fp32-allreduce");
}

std::string grad_accumulation_name(GradAccumulation a) {
  switch (a) {
    case GradAccumulation::fused: return "fused";
    case GradAccumulation::autograd: return "autograd";
    case GradAccumulation::fp32_add: return "fp32-add";
  }
  return "?";
}

GradAccumulation parse_grad_accumulation(const std::string& s) {
  for (GradAccumulation a : {GradAccumulation::fused, GradAccumulation::autograd, GradAccumulation::fp32_add})
    if (s == grad_accumulation_name(a)) return a;
  throw UsageError("--grad-accumulation '" + s + "' is unknown; accepted: fused, autograd, fp32-add");
}

}  // namespace parbench::predict
