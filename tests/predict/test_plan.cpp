// The planning library the predictor links instead of the training stack: stage partition, per-stage parameters
// and the ZeRO closed forms, against values counted by hand.
#include <gtest/gtest.h>

#include <numeric>

#include "parallel/plan/plan.h"

using namespace parbench;

namespace {
// Four MLP blocks of hidden 8 and ffn 32: fcw 256, fcb 32, fcprojw 256, fcprojb 8 elements, all multiples of the
// alignment, 552 per block.
ModelConfig four_block_mlp() {
  ModelConfig c;
  c.kind = ModelKind::mlp, c.layers = 4, c.hidden = 8, c.ffn = 32;
  return c;
}
}  // namespace

TEST(ParallelPlan, StagesHoldTheirVirtualStagesUnits) {
  const ModelConfig mlp = four_block_mlp();
  EXPECT_EQ(stage_numel(mlp, 1, 1), std::vector<std::int64_t>{4 * 552});
  EXPECT_EQ(stage_numel(mlp, 2, 1), (std::vector<std::int64_t>{2 * 552, 2 * 552}));
  EXPECT_EQ(stage_numel(mlp, 4, 1), (std::vector<std::int64_t>{552, 552, 552, 552}));
  // Two chunks of one block each per rank: rank 0 holds virtual stages 0 and 2, rank 1 stages 1 and 3.
  EXPECT_EQ(stage_numel(mlp, 2, 2), (std::vector<std::int64_t>{2 * 552, 2 * 552}));
}

TEST(ParallelPlan, GptEmbeddingGoesWithTheFirstStageAndHeadWithTheLast) {
  ModelConfig gpt;
  gpt.layers = 4, gpt.hidden = 8, gpt.heads = 2, gpt.seq = 4, gpt.vocab = 16;
  const ParamLayout layout = make_layout(gpt);
  const std::int64_t emb = layout.units.front().numel, block = layout.units[1].numel, head = layout.units.back().numel;
  EXPECT_EQ(emb, 16 * 8 + 4 * 8);  // wte (V, C) and wpe (T, C)
  EXPECT_EQ(head, 8 + 8 + 16 * 8);  // lnfw, lnfb, lmw (V, C)
  EXPECT_EQ(stage_numel(gpt, 2, 1), (std::vector<std::int64_t>{emb + 2 * block, 2 * block + head}));
  // Virtual stage 0 (embedding, block 0) and 2 (block 2) on rank 0; 1 (block 1) and 3 (block 3, head) on rank 1.
  EXPECT_EQ(stage_numel(gpt, 2, 2), (std::vector<std::int64_t>{emb + 2 * block, 2 * block + head}));
  const std::vector<std::int64_t> four = stage_numel(gpt, 4, 1);
  EXPECT_EQ(std::accumulate(four.begin(), four.end(), std::int64_t{0}), layout.total);
  EXPECT_EQ(virtual_stage_units(gpt, 0, 4).first, 0);
  EXPECT_EQ(virtual_stage_units(gpt, 0, 4).last, 2);
  EXPECT_EQ(virtual_stage_units(gpt, 3, 4).last, 6);
}

TEST(ParallelPlan, ZeroClosedFormsShardByStage) {
  // bf16 AdamW: 2 bytes per parameter and gradient, 8 of moments and 4 of fp32 master per parameter.
  EXPECT_EQ(optimizer_state_bytes_per_param(OptimizerKind::adamw, DType::bf16), 12);
  EXPECT_EQ(optimizer_state_bytes_per_param(OptimizerKind::adamw, DType::f32), 8);
  EXPECT_EQ(optimizer_state_bytes_per_param(OptimizerKind::sgd, DType::f32), 0);
  auto split = [](int stage) { return zero_closed_form(DType::bf16, OptimizerKind::adamw, 1000, 4, stage); };
  auto bytes = [](const MemSplit& m, MemCategory c) { return m[std::size_t(c)]; };
  for (int stage = 0; stage <= 3; ++stage) {
    const MemSplit m = split(stage);
    EXPECT_EQ(bytes(m, MemCategory::parameters), stage >= 3 ? 500u : 2000u) << stage;
    EXPECT_EQ(bytes(m, MemCategory::gradients), stage >= 2 ? 500u : 2000u) << stage;
    EXPECT_EQ(bytes(m, MemCategory::optimizer), stage >= 1 ? 3000u : 12000u) << stage;
  }
}
