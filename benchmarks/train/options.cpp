#include "benchmarks/train/options.h"
#include "app/cli.h"

#include <sstream>

#include "base/error.h"
#include "base/text.h"
#include "collectives/registry.h"
#include "collectives/communicator/algorithm.h"
#include "collectives/bootstrap.h"
#include "parallel/schedule/schedule.h"
#include "parallel/scheme_kinds.h"

namespace parbench::train_bench {

namespace {

// A loop, not views::filter: clang 14 (the fuzz build's) cannot pipe a vector through libstdc++ 12's views.
std::string model_parallel_scheme_names() {
  std::vector<std::string> names;
  for (const SchemeKind& k : scheme_kinds())
    if (k.model_parallel) names.emplace_back(k.name);
  return join(names, ", ");
}

void parse_profile_steps(Options& o) {
  if (o.profile_steps.empty()) return;
  const auto colon = o.profile_steps.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    std::size_t used_a = 0, used_b = 0;
    o.profile_begin = std::stoi(o.profile_steps.substr(0, colon), &used_a);
    o.profile_end = std::stoi(o.profile_steps.substr(colon + 1), &used_b);
    if (used_a != colon || used_b != o.profile_steps.size() - colon - 1) throw std::invalid_argument("junk");
  } catch (const std::exception&) {
    o.profile_begin = o.profile_end = -1;
  }
  if (o.profile_begin < 0 || o.profile_end <= o.profile_begin)
    throw UsageError("--profile-steps '" + o.profile_steps + "' is not a range A:B of steps with 0 <= A < B");
}

void add_prediction_options(CLI::App& app, Options& o) {
  app.add_flag("--simulate", o.simulate, "predict one step per --gpus value on --system instead of running here");
  app.add_flag("--search", o.search, "predict every layout that fits on --gpus and print the best --top");
  app.add_option("--gpus", o.gpus, "--simulate/--search: GPU counts, N or N,M,...");
  app.add_option("--system", o.system, "--simulate/--search: dgx-a100, dgx-h100, h200, this-machine or FILE.json")
      ->capture_default_str();
  app.add_flag("--sp", o.sp, "--simulate: sequence parallelism (a run here: --scheme sp)");
  app.add_option("--zero", o.zero, "--simulate: ZeRO stage of the data-parallel dimension (a run here: --scheme)")
      ->check(in_range(0, 3))->capture_default_str();
  app.add_option("--recompute", o.recompute, "--simulate: activation recomputation none, selective or full")
      ->capture_default_str();
  app.add_flag("--blocking-p2p", o.blocking_p2p,
               "--simulate/--search: pipeline sends hold their stage until delivered (2022 Megatron), instead of "
               "overlapping compute");
  app.add_flag("--tp-backward-overlap", o.tp_backward_overlap,
               "--simulate/--search: each column-parallel linear's backward collectives run beside its gradient GEMMs "
               "(Megatron since 2022); not with a split-backward schedule");
  app.add_flag("--tp-userbuffers", o.tp_userbuffers,
               "--simulate with --sp: Transformer Engine's userbuffers (NeMo's ub_tp_comm_overlap): "
               "--tp-backward-overlap, and the all-gathers feeding the forward's qkv and fc1 GEMMs and the backward's "
               "proj and fc2 input-gradient GEMMs ring-exchanged beside them, the reduce-scatters after the forward's "
               "proj and fc2 GEMMs pipelined with them in 4 parts on the SMs they leave");
  app.add_flag("--dp-reduce-at-end", o.dp_reduce_at_end,
               "--simulate/--search: the data-parallel reduction starts after the last backward (Megatron before "
               "2023, DeepSpeed's pipeline), instead of bucket by bucket during it");
  app.add_flag("--fsdp", o.fsdp,
               "--simulate with --zero 2: PyTorch FSDP's SHARD_GRAD_OP, per block (each block's parameters gathered "
               "before its forward and kept, its gradients reduce-scattered after its backward), instead of "
               "DeepSpeed's ZeRO-2 (bucketed reduce-scatter, parameters all-gathered after the optimizer)");
  app.add_option("--dp-reduce", o.dp_reduce,
                 "--simulate/--search: the data-parallel gradients reduced in the model's type with the ZeRO "
                 "stage's collective (model), as fp32 (fp32: Megatron with bf16), allreduced whole even under ZeRO-1 "
                 "(allreduce: DeepSpeed's pipeline engine) or both (fp32-allreduce: its bf16 optimizer)")
      ->capture_default_str();
  app.add_flag("--tied-embeddings", o.tied_embeddings,
               "--simulate/--search: the head's weight is the embedding's (Megatron, NeMo, DeepSpeed and MPT tie "
               "them; bench_train's GPT does not): one copy without a pipeline, and with one the first and last "
               "stages allreduce its gradient after the backward");
  app.add_flag("--fused-cross-entropy", o.fused_cross_entropy,
               "--simulate/--search: the loss as one fused kernel over the 16-bit logits (flash-attn's xentropy, "
               "llm-foundry's default) instead of fp32 logits in separate passes");
  app.add_option("--grad-accumulation", o.grad_accumulation,
                 "--simulate: how each microbatch's weight gradients join the step's: inside the weight-gradient GEMM "
                 "(fused: Megatron, Transformer Engine), PyTorch adding each later 16-bit gradient into .grad "
                 "(autograd: DeepSpeed's pipeline engine with ZeRO-1) or each cast to fp32 and added to an fp32 copy "
                 "(fp32-add: DeepSpeed's bf16 optimizer)")
      ->capture_default_str();
  app.add_flag("--param-gather-overlap", o.param_gather_overlap,
               "--simulate/--search with --zero 1 or 2: the updated parameters' all-gather runs block by block during "
               "the next forward (NeMo's overlap_param_sync, Megatron's --overlap-param-gather) instead of after the "
               "optimizer");
  app.add_option("--top", o.top, "--search: layouts to print")->check(in_range(1, 1000))->capture_default_str();
  app.add_option("--calibrate", o.calibrate,
                 "fit link alpha and beta to bench_<collective> CSVs, and --system's matrix and HBM efficiency "
                 "curves to bench_kernels CSVs of --dtype; print the fit errors (nothing runs)")
      ->delimiter(',');
  app.add_option("--system-out", o.system_out, "--calibrate: write --system with the fitted curves to this file");
}

}  // namespace

// "8,64,512" -> {8, 64, 512}; UsageError naming the bad token.
std::vector<int> parse_gpu_list(const std::string& list) {
  std::vector<int> out;
  std::stringstream ss(list);
  for (std::string tok; std::getline(ss, tok, ',');) {
    const std::optional<int> v = parse_int_text(tok);
    if (!v || *v < 1)
      throw UsageError("--gpus '" + list + "': '" + tok + "' is not a GPU count; accepted: N or N,M,... (N >= 1)");
    out.push_back(*v);
  }
  if (out.empty()) throw UsageError("--gpus is empty; accepted: N or N,M,... (N >= 1)");
  return out;
}

// Everything that can be refused without ranks; the rank-count-dependent checks run in validate_on_ranks.
void validate(Options& o, const Device& dev) {
  TrainConfig& t = o.train;
  t.model.kind = parse_model_kind(o.model);
  t.model.dtype = parse_dtype(o.dtype);
  t.model.flash_attention = o.attention == "flash";
  if (o.optimizer != "adamw" && o.optimizer != "sgd")
    throw UsageError("--optimizer '" + o.optimizer + "' is unknown; accepted: adamw, sgd");
  t.optimizer = o.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
  t.overlap = !o.no_overlap;
  t.model.validate();
  t.scheme = &find_scheme_kind(o.scheme);
  if (!t.scheme->model_parallel &&
      (t.tp > 1 || t.pp > 1 || t.dp > 0 || t.microbatches > 0 || t.virtual_stages != 1))
    throw UsageError("--tp, --pp, --dp, --microbatches and --virtual-stages apply to schemes " +
                     model_parallel_scheme_names() + ", not to '" + o.scheme + "'");
  t.schedule = ScheduleRef::parse(o.schedule);
  t.partition = PartitionRequest::parse(o.partition);
  if (t.partition.kind != PartitionRequest::Kind::uniform && !t.scheme->model_parallel)
    throw UsageError("--partition " + o.partition + " applies to schemes " + model_parallel_scheme_names() +
                     ", not to '" + o.scheme + "'");
  t.dp_scheme = &find_dp_scheme_kind(o.dp_scheme);
  t.impl = find_implementation(o.impl);
  if (o.steps < 1) throw UsageError("--steps " + std::to_string(o.steps) + " must be >= 1");
  parse_profile_steps(o);
  if (!o.max_memory.empty()) t.max_memory = parse_size_option("--max-memory", o.max_memory);
  if (o.check_tolerance < 0 || (o.check_tolerance > 0 && !o.check))
    throw UsageError("--check-tolerance " + std::to_string(o.check_tolerance) + " needs --check and a value >= 0");
  if (t.model.dtype == DType::f64 && dev.kind != DeviceKind::cpu)
    throw UsageError("--dtype f64 runs on the cpu device only, not on " + device_name(dev));
}

namespace {

// The layout flags that one of --simulate and --search cannot take, or only with some ZeRO stages.
void validate_layout_flags(const Options& o) {
  if (o.search && o.partition != "uniform")
    throw UsageError("--partition " + o.partition + " applies to a run and to --simulate; --search spreads the "
                     "layers equally over the virtual stages of every layout it tries");
  if (o.search && o.tp_userbuffers)
    throw UsageError("--tp-userbuffers applies to --simulate with --sp; --search tries layouts without sequence "
                     "parallelism, which Transformer Engine's userbuffers need");
  if (o.search && o.fsdp)
    throw UsageError("--fsdp applies to --simulate with --zero 2; --search tries DeepSpeed's ZeRO stages");
  if (o.simulate && o.param_gather_overlap && (o.zero < 1 || o.zero > 2 || o.fsdp))
    throw UsageError("--param-gather-overlap applies to --zero 1 or 2 (the parameters all-gathered after the "
                     "optimizer), not --zero " + std::to_string(o.zero) + (o.fsdp ? " with --fsdp" : "") +
                     " (ZeRO-3 and FSDP gather each block before its forward)");
  if (o.search && o.grad_accumulation != "fused")
    throw UsageError("--grad-accumulation " + o.grad_accumulation + " applies to --simulate (DeepSpeed's pipeline "
                     "engine runs ZeRO 0 or 1); --search tries every ZeRO stage: fused there");
  if (o.search && (o.dp_reduce == "allreduce" || o.dp_reduce == "fp32-allreduce"))
    throw UsageError("--dp-reduce " + o.dp_reduce + " applies to --simulate (DeepSpeed's pipeline engine runs ZeRO 0 "
                     "or 1); --search tries every ZeRO stage: model or fp32 there");
}

}  // namespace

// Options that only a prediction takes, refused without --simulate or --search.
void validate_prediction_options(const Options& o, const CLI::App& app) {
  const bool predicting = o.simulate || o.search;
  for (const char* name : {"--gpus", "--sp", "--zero", "--recompute", "--blocking-p2p", "--tp-backward-overlap",
                           "--tp-userbuffers", "--dp-reduce-at-end", "--fsdp", "--dp-reduce", "--tied-embeddings",
                           "--param-gather-overlap", "--fused-cross-entropy", "--grad-accumulation", "--top"})
    if (!predicting && app.count(name) > 0)
      throw UsageError(std::string(name) + " applies to --simulate and --search, not to a run here");
  if (!predicting && o.calibrate.empty() && app.count("--system") > 0)
    throw UsageError("--system applies to --simulate, --search and --calibrate, not to a run here");
  if (o.calibrate.empty() && !o.system_out.empty())
    throw UsageError("--system-out applies to --calibrate with a bench_kernels CSV");
  if (predicting && o.gpus.empty())
    throw UsageError("--simulate and --search need --gpus N or N,M,... (the GPU counts to predict)");
  if (o.simulate && o.search) throw UsageError("--simulate and --search are alternatives; give one");
  validate_layout_flags(o);
}

void prepare_prediction(Options& o) {
  o.train.model.kind = parse_model_kind(o.model);
  o.train.model.dtype = parse_dtype(o.dtype);
  o.train.model.flash_attention = o.attention == "flash";
  o.train.optimizer = o.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
  o.train.model.validate();
  o.train.schedule = ScheduleRef::parse(o.schedule);
  o.train.partition = PartitionRequest::parse(o.partition);
}

namespace {

// The model-parallel layout: degrees, pipeline schedule, microbatches, chunks and partition.
void add_model_parallel_options(CLI::App& app, Options& o) {
  app.add_option("--tp", o.train.tp, "tensor-parallel degree (tp, sp, hybrid; 0: derived)")->capture_default_str()
      ->check(integer_in(0, 1024));
  app.add_option("--pp", o.train.pp, "pipeline stages (pp, mp, hybrid; 0: derived)")->capture_default_str()
      ->check(integer_in(0, 1024));
  app.add_option("--dp", o.train.dp, "data-parallel degree (hybrid; 0: ranks / (tp x pp))")->capture_default_str()
      ->check(integer_in(0, 1024));
  app.add_option("--schedule", o.schedule, "pipeline schedule:" + schedule_help())
      ->capture_default_str();
  app.add_option("--microbatches", o.train.microbatches,
                 "pipeline microbatches per step (0: global batch / (dp x micro-batch), or pp)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 20));
  app.add_option("--virtual-stages", o.train.virtual_stages,
                 multi_chunk_schedule_names() + ": model chunks per pipeline rank")
      ->capture_default_str()
      ->check(in_range(1, 1024));
  app.add_option("--partition", o.partition,
                 "pp, hybrid: blocks per virtual stage: uniform (equal shares), balanced (even predicted stage "
                 "times, embedding with the first and head with the last) or FILE (counts, one per virtual stage)")
      ->capture_default_str();
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
  add_common_options(app, o.common);
  auto& m = o.train.model;
  app.add_option("--model", o.model, "mlp, gpt or llama")->capture_default_str();
  app.add_option("--layers", m.layers, "blocks")->capture_default_str()->check(integer_in(1, 1 << 20));
  app.add_option("--hidden", m.hidden, "hidden size C")->capture_default_str()->check(integer_in(1, 1 << 24));
  app.add_option("--heads", m.heads, "attention heads (gpt, llama)")->capture_default_str()->check(integer_in(1, 1 << 20));
  app.add_option("--seq", m.seq, "sequence length T (gpt, llama)")->capture_default_str()->check(integer_in(1, 1 << 24));
  app.add_option("--vocab", m.vocab, "vocabulary size V (gpt, llama)")->capture_default_str()->check(integer_in(1, 1 << 26));
  app.add_option("--ffn,--ffn-hidden,--intermediate-size", m.ffn, "MLP hidden size (0: 4 x hidden)")
      ->capture_default_str()
      ->check(integer_in(0, 1 << 26));
  app.add_option("--kv-heads,--num-key-value-heads", m.kv_heads,
                 "llama: key/value heads, dividing --heads (0: as many as --heads; 1: multi-query)")
      ->capture_default_str()
      ->check(integer_in(0, 1 << 20));
  app.add_option("--rope-theta", m.rope_theta, "llama: the rotary embedding's base")->capture_default_str();
  app.add_option("--rms-norm-eps", m.rms_norm_eps, "llama: the RMSNorms' eps")->capture_default_str();
  app.add_option("--dtype", o.dtype, "f32, or bf16 with fp32 master weights")->capture_default_str();
  app.add_option("--attention", o.attention, "flash or plain")->check(CLI::IsMember({"flash", "plain"}))
      ->capture_default_str();
  app.add_option("--global-batch", o.train.global_batch, "samples per step over all ranks")->capture_default_str()
      ->check(integer_in(1, 1 << 30));
  app.add_option("--micro-batch", o.train.micro_batch, "samples per microbatch (0: global / ranks)")
      ->capture_default_str()
      ->check(in_range(0, 1 << 30));
  app.add_option("--scheme", o.scheme, "parallelism scheme:" + scheme_help())
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "ranks as threads (without mpirun)")
      ->check(in_range(0, 1024));
  add_bootstrap_option(app, select_bootstrap);
  add_model_parallel_options(app, o);
  app.add_option("--dp-scheme", o.dp_scheme, "hybrid: ddp, zero1, zero2 or zero3 across data-parallel groups")
      ->capture_default_str();
  app.add_option("--impl", o.impl, "collective implementation (auto, mpi, nccl, ring, ...)")
      ->capture_default_str();
  app.add_option("--steps", o.steps, "timed steps")->capture_default_str()->check(integer_in(1, 1 << 30));
  app.add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str()
      ->check(integer_in(0, 1 << 30));
  app.add_option("--optimizer", o.optimizer, "adamw or sgd")->capture_default_str();
  app.add_option("--lr", o.train.adamw.lr, "learning rate")->capture_default_str()
      ->check(greater_than(0));
  app.add_option("--weight-decay", o.train.adamw.weight_decay, "weight decay")->capture_default_str()
      ->check(at_least(0));
  app.add_option("--bucket-mb", o.train.bucket_mb, "ddp bucket size (MiB)")->capture_default_str()
      ->check(greater_than(0));
  app.add_flag("--no-overlap", o.no_overlap, "ddp: allreduce after backward instead of during it");
  app.add_option("--sync-every", o.train.sync_every, "localsgd: average parameters every k steps")
      ->capture_default_str()
      ->check(integer_in(1, 1 << 30));
  app.add_flag("--offload", o.train.offload, "zero1..3: optimizer state and update in host memory");
  app.add_option("--seed", o.train.seed, "seed of parameters and data")->capture_default_str();
  app.add_option("--timeout", o.timeout, "seconds any collective may wait")->capture_default_str()
      ->check(greater_than(0));
  app.add_option("--peak-tflops", o.peak_tflops, "peak TFLOP/s per rank for MFU (0: leave mfu empty)")
      ->check(at_least(0));
  app.add_flag("--pin", o.pin,
               "bind each rank to core (node-local rank mod cores); with --simulate, predict such a run (ranks that "
               "outnumber the compute units share their own unit)");
  app.add_flag("--check", o.check, "compare parameters with a single-rank run on the same global batch");
  app.add_option("--check-tolerance", o.check_tolerance,
                 "with --check: fail (exit 1) when the relative parameter difference exceeds this");
  app.add_option("--profile-steps", o.profile_steps,
                 "A:B: run steps A..B-1 (warm-up counted) inside cudaProfilerStart/Stop for nsys");
  app.add_flag("--estimate-memory", o.estimate_memory, "print the closed-form memory beside the measured peak");
  app.add_option("--max-memory", o.max_memory,
                 "refuse (before allocating) a run whose closed-form model state per rank exceeds BYTES (K/M/G)");
  add_prediction_options(app, o);
  app.add_flag("--list-runnable", o.list_runnable,
               "print every scheme x schedule x --dp-scheme that can run, with the fewest ranks it needs, one per "
               "line, and exit (the tests and the demo take their lists from it)");
}

}  // namespace parbench::train_bench
