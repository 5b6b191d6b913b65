// The predictor's input (a training layout, as bench_train takes it) and output (one step's time split, throughput
// and memory per rank), and the function that predicts one step on a system.
#pragma once
#include <string>
#include <vector>

#include "core/allocator.h"
#include "models/config.h"
#include "parallel/schedule/schedule.h"
#include "predict/system.h"

namespace parbench::predict {

enum class Recompute { none, selective, full };
std::string recompute_name(Recompute r);
Recompute parse_recompute(const std::string& s);  // UsageError naming the value and none, selective, full

// How the data-parallel gradients are reduced. `model`: in the model's element type, with the ZeRO stage's collective
// (allreduce at stage 0, reduce-scatter at 1 and 2: PyTorch DDP, Megatron with fp16 or --grad-reduce-in-bf16,
// DeepSpeed's ZeRO optimizers). `fp32`: as fp32 with the same collective (Megatron with bf16, which accumulates and
// reduces gradients in fp32 unless told otherwise). `allreduce`: the model's type, allreduced whole even under ZeRO-1,
// each rank then taking its shard (DeepSpeed's pipeline engine). `fp32_allreduce`: both (DeepSpeed's pipeline engine
// with its bf16 optimizer, which allreduces the optimizer's fp32 gradients). ZeRO-1's all-gather of the updated
// parameters moves the model's type either way.
enum class DpReduce { model, fp32, allreduce, fp32_allreduce };
std::string dp_reduce_name(DpReduce r);
DpReduce parse_dp_reduce(const std::string& s);  // UsageError naming the value and the accepted names

// How each microbatch's weight gradients join the step's. `fused`: the weight-gradient GEMM adds into the
// accumulator itself (Megatron's gradient accumulation fusion, Transformer Engine's fuse_wgrad_accumulation,
// bench_train's own GPT, whose matmul backward adds into its gradient buffers): no pass of its own. `autograd`:
// PyTorch's AccumulateGrad adds each later microbatch's 16-bit gradient into `.grad` (DeepSpeed's pipeline engine
// with its ZeRO-1 optimizer): 2p bytes read and p written per parameter from the second microbatch on. `fp32_add`:
// every microbatch's 16-bit gradient cast to fp32 and added to an fp32 copy (DeepSpeed's bf16 optimizer,
// `update_hp_grads` after every backward): the cast reads p and writes 4 bytes, the add reads 4 + 4 and writes 4.
enum class GradAccumulation { fused, autograd, fp32_add };
std::string grad_accumulation_name(GradAccumulation a);
GradAccumulation parse_grad_accumulation(const std::string& s);  // UsageError naming the value and the accepted names

struct Layout {
  ModelConfig model;  // the whole model (tp = 1); dtype bf16 stands for any 16-bit type
  int gpus = 1, tp = 1, pp = 1, dp = 1;
  int virtual_stages = 1;
  ScheduleRef schedule = ScheduleRef::parse("1f1b");  // with pp > 1
  int micro_batch = 1, global_batch = 1;
  bool sequence_parallel = false;
  int zero_stage = 0;
  Recompute recompute = Recompute::none;
  bool adamw = true;
  // Pipeline sends hold the sending stage until the data arrived (Megatron's 2022 pipeline waited for each batched
  // send/receive before computing on); false: they leave on a communication stream beside compute, as bench_train's
  // executor sends.
  bool blocking_p2p = false;
  // Each column-parallel linear's backward collective runs beside that linear's GEMMs, as Megatron's since 2022
  // (megatron/mpu/layers.py: the input gradient's allreduce beside the weight-gradient GEMM; under sequence
  // parallelism the input's all-gather beside the input-gradient GEMM and the input gradient's reduce-scatter beside
  // the weight-gradient GEMM). Only where one action runs both gradients (not zero-bubble's split backward).
  bool tp_backward_overlap = false;
  // Transformer Engine's userbuffers (NeMo's ub_tp_comm_overlap) overlap the rest of the tensor-parallel
  // collectives with the GEMMs beside them (predict/costs.cpp says how); needs sequence parallelism. The layouts
  // that set it set tp_backward_overlap too (its bulk overlaps are that one).
  bool tp_userbuffers = false;
  // The data-parallel gradient reduction starts when the stage's last backward ends, instead of bucket by bucket as
  // the gradients become final: Megatron's own data parallelism before 2023 (megatron/training.py:
  // allreduce_gradients() after forward_backward_func) and DeepSpeed's pipeline engine (ReduceGrads at the end of
  // its TrainSchedule).
  bool dp_reduce_at_end = false;
  // ZeRO-2 as PyTorch FSDP's SHARD_GRAD_OP runs it, one unit per block: each block's parameters all-gathered before
  // its forward (one block ahead, as ZeRO-3's) and kept through its backward, its gradients reduce-scattered when its
  // backward ends; no bucketed reduction and no all-gather after the optimizer (else DeepSpeed's ZeRO-2: gradients
  // reduce-scattered in buckets during the backward, the updated parameters all-gathered after the optimizer).
  // ZeRO-3 is FSDP's FULL_SHARD either way.
  bool zero2_fsdp = false;
  DpReduce dp_reduce = DpReduce::model;
  // The head's weight is the embedding's (Megatron's, NeMo's, DeepSpeed's and MPT's GPT; bench_train's own GPT
  // unties them): without a pipeline one copy serves both; with one, the first and last stages each hold a copy and
  // allreduce its gradient once the backward ends (Megatron's embedding group, DeepSpeed's ReduceTiedGrads), exposed.
  bool tied_embeddings = false;
  // ZeRO-1/2's all-gather of the updated parameters runs during the next step's forward, each block's share in turn
  // (NeMo's overlap_param_sync, Megatron's --overlap-param-gather), instead of after the optimizer; no effect where
  // ZeRO gathers per block anyway (ZeRO-3, FSDP).
  bool param_gather_overlap = false;
  // The loss as one fused cross-entropy kernel over the 16-bit logits (flash-attn's xentropy, llm-foundry's default
  // loss), instead of fp32 logits written and read by separate passes (bench_train's own head).
  bool fused_cross_entropy = false;
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  // Sequence parallelism's backward all-gathers each region's input again (only the 1/t slice was kept): 2022
  // Megatron's behaviour (Korthikanti et al., Table 4); false only to undo that modelling choice (predict/validate.h).
  bool sp_backward_regather = true;
  // Each rank bound to one compute unit (bench_train --pin: node-local rank mod the units, ranks numbered stage by
  // stage), so that ranks outnumbering the units share their own unit, not all of them (GpuModel::compute_units).
  bool pinned = false;
  // Transformer blocks of each virtual stage (pp x virtual_stages counts summing to the layers, as bench_train's
  // --partition gives them); empty: layers / (pp x virtual_stages) each.
  std::vector<int> stage_blocks;
  int microbatches() const { return global_batch / (dp * micro_batch); }
  double blocks_of(int virtual_stage) const;  // virtual stage's block count under stage_blocks
};

// Refuses a layout the real run would refuse (UsageError naming the value): tp x pp x dp != gpus, batch not
// divisible, heads/ffn/vocab not divisible by tp, layers not divisible by pp x v, the schedule's own checks.
void validate_layout(const Layout& l);

// Seconds of one step by where they go on the critical (slowest) pipeline stage; they add up to `step`.
struct TimeSplit {
  double forward = 0, backward = 0, recompute = 0, optimizer = 0, bubble = 0;
  double tp_comm = 0, pp_comm = 0, dp_comm = 0;  // exposed: not hidden behind compute
  double step = 0;
};

struct Prediction {
  TimeSplit time;
  double tokens_per_s = 0, tflops_per_gpu = 0, mfu = 0;
  double bubble_theory = 0;    // the schedule's closed form (pipelines)
  double bubble_simulated = 0; // idle fraction of the stages in the simulated pipeline (mean over stages)
  MemSplit memory{};           // peak bytes per category of the heaviest rank
  double peak_bytes = 0;
  double state_bytes = 0;      // parameters + gradients + optimizer state (what --estimate-memory prints)
  bool fits = true;            // peak_bytes within the GPU's memory
  int heaviest_stage = 0;
};

// Predicts one training step of `l` on `sys`. `split_pp_comm` false skips the second pipeline simulation that
// separates exposed pipeline communication from the bubble (used by the search, where only the total matters).
Prediction predict_step(const Layout& l, const SystemModel& sys, bool split_pp_comm = true);

// The step time at the fast and at the slow end of the system's efficiency spreads (shifted_system +1 and -1): the
// range the component measurements behind the system span (predict/README.md).
struct StepRange {
  double low = 0, high = 0;
};
StepRange predict_step_range(const Layout& l, const SystemModel& sys);

}  // namespace parbench::predict
