// The predictor on llama: the GEMM shapes of its block (grouped-query q/k/v rows, SwiGLU's gate and up in one
// GEMM), a Llama-3-8B-shaped step on 8 and 64 GPUs (state memory from the closed-form parameter count, MFU from the
// closed-form FLOPs), fewer key/value heads storing fewer activations, and a layout search that leaves out the
// tensor-parallel degrees the key/value heads do not divide.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "parallel/plan/plan.h"
#include "predict/costs.h"
#include "predict/memory.h"
#include "predict/predict.h"
#include "predict/search.h"

namespace {

using namespace parbench;
using namespace parbench::predict;

// Llama 3 8B: 32 layers, h 4096, 32 heads of 128, 8 key/value heads, f 14336, V 128256, untied, bf16.
Layout llama3_8b(int gpus, int tp, int global_batch) {
  Layout l;
  l.model.kind = ModelKind::llama;
  l.model.layers = 32, l.model.hidden = 4096, l.model.heads = 32, l.model.kv_heads = 8, l.model.ffn = 14336;
  l.model.vocab = 128256, l.model.seq = 8192, l.model.rope_theta = 500000, l.model.dtype = DType::bf16;
  l.gpus = gpus, l.tp = tp, l.dp = gpus / tp, l.micro_batch = 1, l.global_batch = global_batch;
  return l;
}

TEST(PredictLlama, BlockGemmsHaveGroupedQueryAndSwigluShapes) {
  const LayoutLinears d = layout_linears(llama3_8b(8, 4, 8));
  EXPECT_EQ(d.qkv.in, 4096);
  EXPECT_EQ(d.qkv.out, (4096 + 2 * 8 * 128) / 4);  // the rank's 8 query heads and 2 key/value heads
  EXPECT_EQ(d.proj.in, 1024);
  EXPECT_EQ(d.fc.out, 2 * 14336 / 4);  // gate and up
  EXPECT_EQ(d.fc_proj.in, 14336 / 4);
  EXPECT_EQ(d.fc_proj.out, 4096);
  EXPECT_EQ(d.logits.out, 128256 / 4);
  EXPECT_EQ(d.qkv.tokens, 8192);
}

TEST(PredictLlama, StepOnEightAndSixtyFourGpus) {
  const SystemModel sys = builtin_system("dgx-h100");
  for (const auto& [gpus, tp] : {std::pair{8, 8}, std::pair{64, 8}, std::pair{8, 1}}) {
    SCOPED_TRACE(std::to_string(gpus) + " GPUs, tp " + std::to_string(tp));
    Layout l = llama3_8b(gpus, tp, 8 * gpus / tp);
    if (tp == 1) l.zero_stage = 1;
    validate_layout(l);
    const Prediction p = predict_step(l, sys);
    EXPECT_GT(p.time.step, 0);
    EXPECT_GT(p.mfu, 0.05);
    EXPECT_LT(p.mfu, 1);
    // MFU's FLOPs are the closed form's: TFLOP/s per GPU x step x GPUs.
    EXPECT_NEAR(p.tflops_per_gpu * 1e12 * p.time.step * gpus, model_flops_per_step(l.model, l.global_batch),
                1e-6 * model_flops_per_step(l.model, l.global_batch));
    EXPECT_GT(p.peak_bytes, p.state_bytes);
    if (tp == 1) {  // the whole model's 8,030,261,248 parameters, ZeRO-1 over 8
      const MemSplit m = zero_closed_form(DType::bf16, OptimizerKind::adamw, 8030261248, 8, 1);
      EXPECT_DOUBLE_EQ(p.state_bytes, double(m[0] + m[1] + m[2]));
    }
  }
}

TEST(PredictLlama, FewerKeyValueHeadsStoreFewerActivations) {
  Layout mha = llama3_8b(8, 8, 8), gqa = mha, mqa = mha;
  mha.model.kv_heads = 32, mqa.model.kv_heads = 8;  // 8 is the fewest that tp 8 divides
  gqa.model.kv_heads = 16;
  for (bool flash : {true, false}) {
    mha.model.flash_attention = gqa.model.flash_attention = mqa.model.flash_attention = flash;
    EXPECT_GT(block_activation_bytes(mha), block_activation_bytes(gqa));
    EXPECT_GT(block_activation_bytes(gqa), block_activation_bytes(mqa));
    // q, k and v: 2 + 4 g bytes per s b h split over t (g = kv / heads): 32 -> 16 heads saves 4 x 0.5 / 8.
    const double sbh = 8192.0 * 4096;
    EXPECT_NEAR(block_activation_bytes(mha) - block_activation_bytes(gqa), sbh * 4 * 0.5 / 8, 1e-6 * sbh);
  }
}

TEST(PredictLlama, SearchSkipsTensorParallelDegreesTheKeyValueHeadsDoNotDivide) {
  Layout base = llama3_8b(64, 1, 512);
  base.model.kv_heads = 2;
  const SearchResult r = search_layouts(base, builtin_system("dgx-h100"));
  ASSERT_FALSE(r.fitting.empty());
  for (const Candidate& c : r.fitting) EXPECT_LE(c.layout.tp, 2) << "tp " << c.layout.tp << " with 2 kv heads";
  bool tp2 = false;
  for (const Candidate& c : r.fitting) tp2 = tp2 || c.layout.tp == 2;
  EXPECT_TRUE(tp2);
}

}  // namespace
