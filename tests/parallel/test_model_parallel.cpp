// The model-parallel family on cpu threads: every pipeline schedule, naive model parallelism and hybrid grids
// match the single-rank run; the grid layout, stage assignment, activation peaks and bad configurations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <numeric>

#include "base/error.h"
#include "parallel/plan/partition.h"
#include "parallel/schemes/model_parallel.h"
#include "train_test_util.h"

using namespace parbench;
using namespace parbench::test;
using ::testing::HasSubstr;

namespace {

TrainConfig four_layers(ModelKind kind) {
  TrainConfig c = base_config(kind);
  c.model.layers = 4;
  c.global_batch = 8;
  return c;
}

std::string usage_error(const TrainConfig& c, int ranks) {
  try {
    plan_model_parallel(c, ranks);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

// The message of the UsageError `f` throws.
template <class F>
std::string usage_error_of(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

struct Case {
  const char* scheme;
  const char* schedule;
  int ranks, dp, tp, pp, microbatches, virtual_stages;
  const char* dp_scheme = "ddp";
};

void expect_matches_single(ModelKind kind, const Case& k) {
  TrainConfig c = four_layers(kind);
  c.scheme = &find_scheme_kind(k.scheme), c.dp = k.dp, c.tp = k.tp, c.pp = k.pp;
  c.schedule = *k.schedule ? ScheduleRef::parse(k.schedule) : ScheduleRef{};
  c.microbatches = k.microbatches, c.virtual_stages = k.virtual_stages, c.dp_scheme = &find_dp_scheme_kind(k.dp_scheme);
  TrainConfig single = base_config(kind);
  single.model = c.model;
  single.scheme = &find_scheme_kind("single");
  single.global_batch = c.global_batch;
  single.micro_batch = c.global_batch / (std::max(k.dp, 1) * std::max(k.microbatches, 1));
  const auto ref = train(single, 1)[0];
  const auto got = train(c, k.ranks);
  const std::string what = std::string(k.scheme) + " " + k.schedule + " " + std::string(model_kind_name(kind)) +
                           " ranks=" + std::to_string(k.ranks) + " m=" + std::to_string(k.microbatches) +
                           " v=" + std::to_string(k.virtual_stages) + " " + k.dp_scheme;
  // SGD: the same arithmetic, summed in another order; float rounding only.
  EXPECT_LT(max_rel_diff(got[0].params, ref.params), 2e-6) << what;
  for (int r = 0; r < k.ranks; ++r) {
    EXPECT_NEAR(got[r].loss, ref.loss, 1e-5 * std::fabs(ref.loss)) << what << " rank " << r;
    EXPECT_EQ(got[r].params, got[0].params) << what << " rank " << r;
  }
}

}  // namespace

// Every model-parallel entry of the scheme registry, with its default degrees on two ranks (the registry's spread
// decides which degree takes them), matches single-rank training.
TEST(ModelParallel, EveryRegisteredSchemeMatchesSingleRank) {
  int swept = 0;
  for (const SchemeKind& kind : scheme_kinds()) {
    if (!kind.model_parallel) continue;
    const std::string name(kind.name);
    for (ModelKind model : {ModelKind::gpt, ModelKind::llama})
      expect_matches_single(model, {name.c_str(), "gpipe", 2, 0, 0, 0, kind.whole_batch ? 0 : 2, 1});
    ++swept;
  }
  EXPECT_GE(swept, 5);
}

TEST(ModelParallel, GridLayoutPutsTensorRanksAdjacent) {
  // 2 x 2 x 2: rank = (pp * dp + dp_rank) * tp + tp_rank.
  const ParallelGrid g = ParallelGrid::of(6, 2, 2, 2);
  EXPECT_EQ(g.tp_rank, 0);
  EXPECT_EQ(g.dp_rank, 1);
  EXPECT_EQ(g.pp_rank, 1);
  const ParallelGrid h = ParallelGrid::of(5, 3, 1, 2);
  EXPECT_EQ(h.dp_rank, 2);
  EXPECT_EQ(h.pp_rank, 1);
}

TEST(ModelParallel, VirtualStagesSplitLayersEvenly) {
  ModelConfig c;
  c.layers = 4;
  // gpt units: 0 embedding, 1..4 blocks, 5 head.
  EXPECT_EQ(virtual_stage_units(c, 0, 2).first, 0);
  EXPECT_EQ(virtual_stage_units(c, 0, 2).last, 3);
  EXPECT_EQ(virtual_stage_units(c, 1, 2).first, 3);
  EXPECT_EQ(virtual_stage_units(c, 1, 2).last, 6);
  EXPECT_EQ(virtual_stage_units(c, 2, 4).first, 3);
  EXPECT_EQ(virtual_stage_units(c, 2, 4).last, 4);
  c.kind = ModelKind::mlp;
  EXPECT_EQ(virtual_stage_units(c, 3, 4).first, 3);
  EXPECT_EQ(virtual_stage_units(c, 3, 4).last, 4);
}

TEST(ModelParallel, BalancedPartitionsEvenOutTheLargestStage) {
  // Start: one block each, times 1.5 1 1 3.5 (embedding 0.5 on the first, head 2.5 on the last); the four other
  // blocks go one by one to the least loaded stage: 1, 2, 0, then 1 again (ties to the earlier stage).
  EXPECT_EQ(balanced_blocks(8, 4, {0.5, 1, 2.5}, true), (std::vector<int>{2, 3, 2, 1}));
  EXPECT_EQ(balanced_blocks(8, 4, {0.5, 1, 2.5}, false), (std::vector<int>{2, 2, 2, 2}));  // an MLP has no ends
  EXPECT_EQ(balanced_blocks(4, 2, {0, 1, 0}, true), (std::vector<int>{2, 2}));
  EXPECT_EQ(balanced_blocks(4, 2, {0, 1, 10}, true), (std::vector<int>{3, 1}));  // every stage keeps a block
  EXPECT_THROW(balanced_blocks(3, 4, {}, true), UsageError);
}

TEST(ModelParallel, PartitionUnitsFollowTheBlockCounts) {
  ModelConfig c;
  c.layers = 6;
  // gpt units: 0 embedding, 1..6 blocks, 7 head; blocks 1, 3, 2.
  const std::vector<int> blocks{1, 3, 2};
  EXPECT_EQ(partition_units(c, 0, blocks).first, 0);
  EXPECT_EQ(partition_units(c, 0, blocks).last, 2);
  EXPECT_EQ(partition_units(c, 1, blocks).first, 2);
  EXPECT_EQ(partition_units(c, 1, blocks).last, 5);
  EXPECT_EQ(partition_units(c, 2, blocks).first, 5);
  EXPECT_EQ(partition_units(c, 2, blocks).last, 8);
  c.kind = ModelKind::mlp;
  EXPECT_EQ(partition_units(c, 1, blocks).first, 1);
  EXPECT_EQ(partition_units(c, 1, blocks).last, 4);
  EXPECT_EQ(partition_text(blocks), "1+3+2");
  EXPECT_EQ(stage_numel(c, 3, 1, blocks)[1], 3 * stage_numel(c, 6, 1)[0]);  // three equal MLP layers
}

TEST(ModelParallel, EveryScheduleMatchesSingleRank) {
  const Case cases[] = {
      {"pp", "gpipe", 2, 1, 1, 2, 2, 1},       {"pp", "gpipe", 2, 1, 1, 2, 4, 1},
      {"pp", "1f1b", 2, 1, 1, 2, 4, 1},        {"pp", "1f1b", 4, 1, 1, 4, 4, 1},
      {"pp", "1f1b", 4, 1, 1, 4, 8, 1},        {"pp", "interleaved", 2, 1, 1, 2, 4, 2},
      {"pp", "interleaved", 2, 1, 1, 2, 2, 2}, {"pp", "zb-h1", 2, 1, 1, 2, 4, 1},
      {"pp", "zb-h1", 4, 1, 1, 4, 4, 1},       {"mp", "", 2, 1, 1, 2, 1, 1},
      {"mp", "", 4, 1, 1, 4, 1, 1},
  };
  for (ModelKind kind : {ModelKind::gpt, ModelKind::llama, ModelKind::mlp})
    for (const Case& k : cases) expect_matches_single(kind, k);
}

TEST(ModelParallel, TensorAndSequenceParallelMatchSingleRank) {
  for (ModelKind kind : {ModelKind::gpt, ModelKind::llama, ModelKind::mlp}) {
    expect_matches_single(kind, {"tp", "", 2, 1, 2, 1, 1, 1});
    expect_matches_single(kind, {"tp", "", 2, 1, 2, 1, 2, 1});  // with gradient accumulation
  }
  for (ModelKind kind : {ModelKind::gpt, ModelKind::llama}) {
    expect_matches_single(kind, {"sp", "", 2, 1, 2, 1, 1, 1});
    expect_matches_single(kind, {"tp", "", 4, 2, 2, 1, 1, 1});  // tp inside data parallelism
    expect_matches_single(kind, {"sp", "", 4, 2, 2, 1, 2, 1});
  }
}

TEST(ModelParallel, TensorParallelBytesPerStepAreMegatronsFourAllreducesPerLayer) {
  // tp = 2, m = 2 microbatches of b = 4 (global batch 8): per layer and microbatch 4 allreduces of b s h (2 forward, 2 backward);
  // besides the blocks, the vocabulary-parallel embedding (1 allreduce of b s h forward), the head's input
  // gradient (1 backward) and the loss statistics (max: b s floats, sums: 2 b s floats).
  TrainConfig c = four_layers(ModelKind::gpt);
  c.scheme = &find_scheme_kind("tp"), c.microbatches = 2;
  const auto got = train(c, 2, 1);
  const std::uint64_t b = 4, s = std::uint64_t(c.model.seq), h = std::uint64_t(c.model.hidden), n = 2, m = 2;
  auto allreduce = [&](std::uint64_t bytes) { return 2 * bytes * (n - 1) / n; };
  const std::uint64_t bsh = b * s * h * 4, stats = b * s * 4;
  const std::uint64_t blocks = m * 4 * std::uint64_t(c.model.layers) * allreduce(bsh);
  const std::uint64_t rest = m * (2 * allreduce(bsh) + allreduce(stats) + allreduce(2 * stats));
  for (const auto& r : got) EXPECT_EQ(r.comm, blocks + rest);
}

TEST(ModelParallel, HybridGridsMatchSingleRank) {
  expect_matches_single(ModelKind::llama, {"hybrid", "1f1b", 4, 1, 2, 2, 2, 1});           // 1 x 2 x 2
  expect_matches_single(ModelKind::llama, {"hybrid", "zb-h1", 8, 2, 2, 2, 2, 1, "zero3"}); // 2 x 2 x 2
  expect_matches_single(ModelKind::gpt, {"hybrid", "1f1b", 4, 1, 2, 2, 2, 1});            // 1 x 2 x 2
  expect_matches_single(ModelKind::gpt, {"hybrid", "1f1b", 8, 2, 2, 2, 2, 1, "zero1"});   // 2 x 2 x 2
  expect_matches_single(ModelKind::gpt, {"hybrid", "interleaved", 8, 2, 2, 2, 2, 2});     // 2 x 2 x 2, v = 2
  expect_matches_single(ModelKind::mlp, {"hybrid", "zb-h1", 8, 2, 2, 2, 2, 1});
}

TEST(ModelParallel, HybridDataAndPipelineMatchesSingleRank) {
  expect_matches_single(ModelKind::llama, {"hybrid", "interleaved", 4, 2, 1, 2, 2, 2, "zero2"});
  expect_matches_single(ModelKind::gpt, {"hybrid", "1f1b", 4, 2, 1, 2, 2, 1, "ddp"});
  expect_matches_single(ModelKind::gpt, {"hybrid", "1f1b", 4, 2, 1, 2, 2, 1, "zero1"});
  expect_matches_single(ModelKind::mlp, {"hybrid", "gpipe", 4, 2, 1, 2, 4, 1, "zero1"});
  expect_matches_single(ModelKind::gpt, {"hybrid", "1f1b", 4, 2, 1, 2, 2, 1, "zero2"});
  expect_matches_single(ModelKind::gpt, {"hybrid", "zb-h1", 4, 2, 1, 2, 2, 1, "zero3"});
  expect_matches_single(ModelKind::gpt, {"hybrid", "", 4, 2, 2, 1, 2, 1, "zero3"});  // dp x tp, prefetching
}

TEST(ModelParallel, OneFOneBHoldsFewerActivationsThanGpipe) {
  // m = 8 > p = 2: GPipe keeps all 8 microbatches' activations on stage 0, 1F1B at most p = 2.
  std::map<std::string, std::vector<std::size_t>> peak;
  for (const char* schedule : {"gpipe", "1f1b"}) {
    TrainConfig c = four_layers(ModelKind::gpt);
    c.scheme = &find_scheme_kind("pp"), c.schedule = ScheduleRef::parse(schedule);
    c.microbatches = 8, c.global_batch = 16;
    std::mutex mu;
    peak[schedule].resize(2);
    run_ranks({2, Device{}, 60}, [&](Communicator& comm) {
      TrackedAllocator alloc(comm.device());
      Stream stream(comm.device());
      auto scheme = make_scheme(c, {comm, alloc, stream});
      scheme->step(0);
      alloc.reset_peaks();
      scheme->step(1);
      std::lock_guard lock(mu);
      peak[schedule][std::size_t(comm.rank())] = alloc.split_at_peak()[int(MemCategory::activations)];
      const PipelineTiming& timing = *scheme->last_step_pipeline();
      EXPECT_EQ(timing.peak_in_flight, std::string(schedule) == "gpipe" ? 8 : 2 - comm.rank());
      // The replay's input: one time per compute action of this step (8 F, 8 B), adding up to the busy time.
      EXPECT_EQ(timing.action_ms.size(), 16u);
      EXPECT_NEAR(std::accumulate(timing.action_ms.begin(), timing.action_ms.end(), 0.0), timing.busy_ms,
                  1e-9 * timing.busy_ms);
    });
  }
  EXPECT_LT(peak["1f1b"][0] * 3, peak["gpipe"][0]) << "1f1b " << peak["1f1b"][0] << " gpipe " << peak["gpipe"][0];
}

TEST(ModelParallel, BadConfigurationsAreRefused) {
  TrainConfig c = four_layers(ModelKind::gpt);
  c.scheme = &find_scheme_kind("hybrid"), c.dp = 2, c.tp = 1, c.pp = 3;
  EXPECT_THAT(usage_error(c, 8), HasSubstr("--dp 2 x --tp 1 x --pp 3 = 6 ranks, but 8 ranks run"));
  c.scheme = &find_scheme_kind("pp"), c.dp = 0, c.pp = 0, c.microbatches = 4;
  c.model.layers = 3;
  EXPECT_THAT(usage_error(c, 2), HasSubstr("--layers 3 is not divisible by --pp 2 x --virtual-stages 1"));
  c.model.layers = 4, c.schedule = ScheduleRef::parse("interleaved"), c.virtual_stages = 4;
  EXPECT_THAT(usage_error(c, 2), HasSubstr("--layers 4 is not divisible by --pp 2 x --virtual-stages 4"));
  c.schedule = ScheduleRef::parse("1f1b"), c.virtual_stages = 1, c.microbatches = 2;
  EXPECT_THAT(usage_error(c, 4), HasSubstr("1f1b needs microbatches >= stages, got 2 microbatches for 4 stages"));
  c.microbatches = 3;
  EXPECT_THAT(usage_error(c, 2), HasSubstr("global batch 8 is not divisible by 1 data-parallel groups x 3"));
  c.microbatches = 4;
  EXPECT_THAT(usage_error_of([] { ScheduleRef::parse("bogus"); }), HasSubstr("unknown pipeline schedule 'bogus'"));
  c.schedule = ScheduleRef::parse("gpipe"), c.virtual_stages = 2;
  EXPECT_THAT(usage_error(c, 2), HasSubstr("--virtual-stages 2 needs --schedule interleaved"));
  c.virtual_stages = 1, c.scheme = &find_scheme_kind("mp");
  EXPECT_THAT(usage_error(c, 2), HasSubstr("scheme mp passes the whole batch"));
  c.scheme = &find_scheme_kind("hybrid"), c.microbatches = 4;
  EXPECT_THAT(usage_error_of([] { find_dp_scheme_kind("fsdp2"); }),
              HasSubstr("--dp-scheme 'fsdp2' is unknown; accepted: ddp, zero1, zero2, zero3"));
  EXPECT_THAT(usage_error_of([] { find_dp_scheme_kind("single"); }), HasSubstr("--dp-scheme 'single' is unknown"));
  c.dp_scheme = &find_dp_scheme_kind("ddp");
  EXPECT_EQ(usage_error(c, 2), "(accepted)");
  c.scheme = &find_scheme_kind("tp"), c.tp = 0, c.microbatches = 1, c.model.heads = 2;
  EXPECT_THAT(usage_error(c, 4), HasSubstr("--heads 2 is not divisible by --tp 4"));
  c.model.heads = 4, c.model.ffn = 42;
  EXPECT_THAT(usage_error(c, 4), HasSubstr("--ffn 42 is not divisible by --tp 4"));
}
