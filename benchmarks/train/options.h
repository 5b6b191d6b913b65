// bench_train's command line: its options (what the rest of the program reads) and the checks that need no ranks, apart from main() so that a fuzz
// target (tests/fuzz/fuzz_train_cli.cpp) parses argument vectors through them without running anything. The
// checks that need the ranks (batches, grids, implementations) run in bench_train.cpp, on the ranks.
#pragma once
#include <string>
#include <vector>

#include "app/common_options.h"  // and CLI::App, declared
#include "core/device.h"
#include "parallel/train_config.h"

namespace parbench::train_bench {

struct Options {
  CommonOptions common;
  TrainConfig train;
  std::string model = "gpt", dtype = "f32", optimizer = "adamw", attention = "flash";
  // --scheme, --schedule, --dp-scheme and --impl as given; validate() and prepare_prediction() resolve them to their
  // registry entries in `train`, which the rest of the program carries.
  std::string scheme = "single", schedule = "1f1b", dp_scheme = "ddp", impl = "auto", partition = "uniform";
  int ranks = 0, steps = 5, warmup = 1;
  std::string max_memory;     // --max-memory BYTES (K/M/G)
  std::string profile_steps;  // "a:b": steps a..b-1 inside cudaProfilerStart/Stop
  int profile_begin = -1, profile_end = -1;
  double timeout = 300, peak_tflops = 0, check_tolerance = 0;
  bool check = false, estimate_memory = false, no_overlap = false, pin = false;
  // --simulate / --search: predicted steps on a system instead of a run here.
  bool simulate = false, search = false, sp = false;
  std::string gpus, system = "dgx-a100", recompute = "none";
  std::vector<std::string> calibrate;  // bench_<collective> CSVs (alpha, beta) and bench_kernels CSVs (curves)
  std::string system_out;              // --calibrate: --system with the fitted kernel curves, written here
  bool blocking_p2p = false;           // pipeline sends hold their stage (2022 Megatron)
  bool tp_backward_overlap = false;    // column-parallel backward collectives beside their GEMMs (Megatron)
  bool tp_userbuffers = false;         // and the rest beside theirs (Transformer Engine's userbuffers)
  bool dp_reduce_at_end = false;       // data-parallel reduction after the last backward (Megatron before 2023)
  bool fsdp = false;                   // --zero 2 as PyTorch FSDP's SHARD_GRAD_OP (per-block units)
  std::string dp_reduce = "model";     // the data-parallel gradients' element type and collective
  bool tied_embeddings = false;        // the head's weight is the embedding's (Megatron, DeepSpeed, MPT)
  bool param_gather_overlap = false;   // ZeRO-1/2's parameter all-gather during the next forward (NeMo, Megatron)
  bool fused_cross_entropy = false;    // the loss as one fused kernel over 16-bit logits (llm-foundry)
  std::string grad_accumulation = "fused";  // how microbatches' weight gradients add up (predict::GradAccumulation)
  int zero = 0, top = 5;
  bool list_runnable = false;  // --list-runnable: print the runnable combinations (runnable.h) and exit
};

// Registers every option on `app`, those of a run here and those of --simulate, --search and --calibrate (bad
// numbers and names fail at parse time, naming the accepted form).
void add_options(CLI::App& app, Options& o);

// Everything of a run here that can be refused without ranks (UsageError naming the value and the accepted
// form); fills o.train's model, optimizer, profile range and memory limit.
void validate(Options& o, const Device& dev);

// Options that only a prediction takes, refused without --simulate or --search.
void validate_prediction_options(const Options& o, const CLI::App& app);

// --simulate / --search: the model options into o.train (UsageError for a bad model).
void prepare_prediction(Options& o);
// --partition balanced: one microbatch's predicted forward + backward time of the embedding, a block and the head of
// o.train's model on `dev`'s kind of processor (this machine's system for cpu and simt, an H100 for cuda).
UnitCosts predicted_unit_costs(const Options& o, const Device& dev);

// --gpus: "N" or "N,M,..." GPU counts (UsageError naming the bad token and the accepted form).
std::vector<int> parse_gpu_list(const std::string& list);

}  // namespace parbench::train_bench
